"""erfcx(x) = exp(x^2) erfc(x) in Triton: libdevice.erfcx on CUDA; in the interpreter,
which cannot call libdevice, this stand-in in f64 (relative error below 1e-13 against
ATen's calc_erfcx): exp(x^2) (1 - erf(x)) below 2 (x^2 rounded to x's type, as
there, for exp amplifies its rounding), where erfc(x) > 0.004 keeps the
difference exact enough, and Laplace's continued fraction
erfcx(x) = 1/sqrt(pi) / (x + (1/2)/(x + 1/(x + (3/2)/(x + …)))), 60 levels, from 2 on.
"""

from __future__ import annotations

_LEVELS = 60

INTERPRETER: dict[str, str] = {
    "erfcx": f"""@triton.jit
def _erfcx(x):
    y = x.to(tl.float64)
    near = tl.exp((x * x).to(tl.float64)) * (1.0 - tl.erf(y))  # x^2 rounded as ATen's
    far = tl.where(y > 2.0, y, 2.0)
    acc = tl.full(far.shape, 0.0, tl.float64)
    for i in tl.static_range({_LEVELS}):
        acc = (({_LEVELS} - i) * 0.5) / (far + acc)
    far = {0.56418958354775628694807945156!r} / (far + acc)
    r = tl.where(y < 2.0, near, far)
    r = tl.where(y < -26.7, float("inf"), r)
    r = tl.where(y != y, y, r)
    return r.to(x.dtype)
""",
}
