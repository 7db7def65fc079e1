#!/bin/sh
# A stand-in for a Python whose OpenBLAS does not know the processor: "-c ..." (the BLAS
# check) names the core it would run on stderr, as OPENBLAS_VERBOSE=2 does (Prescott
# unless OPENBLAS_CORETYPE says another); anything else runs as a shell script (the fake
# peer), with OPENBLAS_CORETYPE written to $FAKE_BLAS_LOG first.
if [ "$1" = "-c" ]; then
	if [ "$OPENBLAS_VERBOSE" = 2 ]; then
		echo "Core: ${OPENBLAS_CORETYPE:-Prescott}" >&2
	fi
	exit 0
fi
echo "peer OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-unset}" >> "$FAKE_BLAS_LOG"
exec /bin/sh "$@"
