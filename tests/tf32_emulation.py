"""The Triton interpreter multiplies float32 dot operands exactly, whatever `input_precision` says;
an NVIDIA GPU's plain tf32 product keeps the top 10 mantissa bits of each float32 operand and drops
the rest (truncation). The interpreter is patched to do the same, so CPU tests carry the GPU's tf32
error instead of hiding it. Without the truncation the 16-bit cache test
(`test_half_precision_cache_through_folds`) would pass here even if the preparation did not round
its tf32 factors itself (`prep._tf32`, whose already-rounded values truncation leaves as they
are), while a GPU, truncating, fails it without that rounding."""
import numpy as np


def truncate_to_tf32(x: np.ndarray) -> np.ndarray:
    """float32 values with the 13 low mantissa bits cleared (toward zero; inf and nan kept)."""
    bits = x.view(np.uint32)
    special = (bits & np.uint32(0x7F800000)) == np.uint32(0x7F800000)
    return np.where(special, bits, bits & np.uint32(0xFFFFE000)).view(np.float32)


def install() -> None:
    """Truncate float32 operands of plain tf32 dots in the interpreter (tf32x3 and ieee stay exact)."""
    from triton.runtime import interpreter

    exact_dot = interpreter.InterpreterBuilder.create_dot

    def create_dot(self, a, b, d, input_precision, max_num_imprecise_acc):
        if str(input_precision).upper().endswith(".TF32") and a.data.dtype == np.float32:
            a = interpreter.TensorHandle(truncate_to_tf32(a.data), a.dtype)
            b = interpreter.TensorHandle(truncate_to_tf32(b.data), b.dtype)
        return exact_dot(self, a, b, d, input_precision, max_num_imprecise_acc)
    interpreter.InterpreterBuilder.create_dot = create_dot
