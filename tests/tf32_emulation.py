"""The Triton interpreter multiplies float32 dot operands exactly, whatever `input_precision` says;
an NVIDIA GPU multiplies "tf32" operands at 10 mantissa bits. Our kernels round such operands to
nearest before every plain tf32 product on the GPU (`prep._dot`), so the interpreter is patched
to do the same: CPU tests then carry the GPU's tf32 error instead of hiding it (a 16-bit cache
test once passed here at 6e-4 and failed on the GPU, where truncated operands gave about 4e-3)."""
import numpy as np


def round_to_tf32(x: np.ndarray) -> np.ndarray:
    """float32 values rounded to 10 mantissa bits (nearest, ties to even; inf and nan kept)."""
    bits = x.view(np.uint32)
    special = (bits & np.uint32(0x7F800000)) == np.uint32(0x7F800000)
    rounded = (bits + np.uint32(0x0FFF) + ((bits >> np.uint32(13)) & np.uint32(1))) & np.uint32(0xFFFFE000)
    return np.where(special, bits, rounded).view(np.float32)


def install() -> None:
    """Round float32 operands of plain tf32 dots in the interpreter (tf32x3 and ieee stay exact)."""
    from triton.runtime import interpreter

    exact_dot = interpreter.InterpreterBuilder.create_dot

    def create_dot(self, a, b, d, input_precision, max_num_imprecise_acc):
        if str(input_precision).upper().endswith(".TF32") and a.data.dtype == np.float32:
            a = interpreter.TensorHandle(round_to_tf32(a.data), a.dtype)
            b = interpreter.TensorHandle(round_to_tf32(b.data), b.dtype)
        return exact_dot(self, a, b, d, input_precision, max_num_imprecise_acc)
    interpreter.InterpreterBuilder.create_dot = create_dot
