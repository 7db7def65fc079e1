"""Validates ONNX models with the ONNX checker (full check, with shape inference)."""
import sys

import onnx

for path in sys.argv[1:]:
    try:
        onnx.checker.check_model(onnx.load(path), full_check=True)
    except Exception as e:
        sys.exit(f"{path}: {e}")
