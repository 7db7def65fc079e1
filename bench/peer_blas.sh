# Sourced by the side-by-side scripts after $python is set: where the interpreter's
# OpenBLAS does not know the processor and falls back to its pre-AVX2 kernels (Debian 12's
# OpenBLAS 0.3.21 picks "Prescott" on an Intel Emerald Rapids, and PyTorch's step runs
# 4-5x slower), export OPENBLAS_CORETYPE for the processor's kernels, as locus bench
# -compare does (cli/peerblas.go). A given OPENBLAS_CORETYPE is kept.
if [ -z "${OPENBLAS_CORETYPE+set}" ]; then
  core=$(OPENBLAS_VERBOSE=2 "$python" -c 'import torch; torch.ones(64, 64) @ torch.ones(64, 64)' 2>&1 | sed -n 's/^Core: //p' | head -n 1)
  case "$core" in
  "" | Haswell | Zen | SkylakeX | Cooperlake | SapphireRapids) ;;
  *)
    want=
    if grep -qw avx512f /proc/cpuinfo 2>/dev/null; then want=SkylakeX; elif grep -qw avx2 /proc/cpuinfo 2>/dev/null; then want=Haswell; fi
    if [ -n "$want" ]; then
      export OPENBLAS_CORETYPE=$want
      echo "PyTorch's OpenBLAS picked its $core (pre-AVX2) kernels on this processor; running it with OPENBLAS_CORETYPE=$want" >&2
    fi
    ;;
  esac
fi
