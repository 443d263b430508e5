"""The Triton interpreter, sped up for the kernel tests without changing what it computes.

Before every kernel launch, and again at every call of a `@triton.jit` helper inside a kernel (once
per program of the grid), the interpreter swaps Triton's language builtins for interpreted ones,
finding them by listing every member of `triton.language`, its `math` and `tensor` with
`inspect.getmembers`: a third of a kernel test's time on the CPU. Which members are builtins never
changes, so each module's are listed once and every swap reads those names alone; what is swapped
in, and when, stays the interpreter's own."""
import inspect


def install() -> None:
    """List each module's builtins once in the interpreter's `_patch_builtin` (a Triton without
    that function keeps its own way)."""
    from triton.language import core
    from triton.runtime import interpreter

    if not (hasattr(interpreter, "_patch_builtin") and hasattr(interpreter, "_patch_attr")):
        return
    builtin_names: dict[object, list[str]] = {}

    def patch_builtin(pkg, builder, scope):
        if pkg not in builtin_names:  # first met at a launch, before any of its members is swapped
            builtin_names[pkg] = [name for name, member in inspect.getmembers(pkg) if core.is_builtin(member)]
        for name in builtin_names[pkg]:
            member = getattr(pkg, name)
            if core.is_builtin(member):  # a helper's call inside a launch finds them swapped already
                interpreter._patch_attr(pkg, name, member, builder, scope)
    interpreter._patch_builtin = patch_builtin
