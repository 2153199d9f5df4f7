"""The ellipsoid fluid model's per-geom coefficients (``geom_fluid``), as MuJoCo's compiler sets them
(``mjCGeom::SetFluidCoefs`` and ``GetAddedMassKappa``, src/user/user_objects.cc).

A geom with ``fluidshape="ellipsoid"`` is treated as the ellipsoid with its semi-axes
(:func:`semi_axes`); its added ("virtual") mass and inertia come from the kappa integrals of
potential flow around that ellipsoid,

    kappa_x = a b c * integral_0^inf dl / ((a^2 + l)^(3/2) (b^2 + l)^(1/2) (c^2 + l)^(1/2)),

which MuJoCo evaluates with a 15-point Gauss-Kronrod rule after the change of variables
l = s x^3 / (1 - x)^2 (s a length scale squared); the same nodes and weights are used here so
that the coefficients agree to the last bits. The engine side is
:mod:`kinedyn.engine.passive_fluid`.
"""

from __future__ import annotations

import math

from kinedyn.engine.types import GeomType

# 15-point Gauss-Kronrod weights on [0, 1] (MuJoCo rounds them to 8 digits; kept so)
_KRONROD_W = (0.01146766, 0.03154605, 0.05239501, 0.07032663, 0.08450236,
              0.09517529, 0.10221647, 0.10474107, 0.10221647, 0.09517529,
              0.08450236, 0.07032663, 0.05239501, 0.03154605, 0.01146766)
# the nodes x_i mapped to l_i = x^3 / (1 - x)^2, and dl/dx at them
_KRONROD_L = (7.865151709349917e-08, 1.7347976913907274e-05, 0.0003548008144506193,
              0.002846636252924549, 0.014094260903596077, 0.053063261727396636,
              0.17041978741317773, 0.5, 1.4036301548686991, 3.9353484827022642,
              11.644841677041734, 39.53187807410903, 177.5711362220801,
              1429.4772912937397, 54087.416549217705)
_KRONROD_D = (5.538677720489877e-05, 0.002080868285293228, 0.016514126520723166,
              0.07261900344370877, 0.23985243401862602, 0.6868318249020725,
              1.8551129519182894, 5.0, 14.060031152313941, 43.28941239611009,
              156.58546376397112, 747.9826085305024, 5827.4042950027115,
              116754.0197944512, 25482945.327264845)

# mjEPS
_EPS = 1e-14
# the coefficients of fluidcoef: blunt drag, slender drag, angular drag, Kutta lift, Magnus lift
FLUIDCOEF_DEFAULT = (0.5, 0.25, 1.5, 1.0, 1.0)
NFLUID = 12


def semi_axes(gtype: int, size) -> tuple[float, float, float]:
    """The semi-axes of the ellipsoid standing for a geom (mju_geomSemiAxes)."""
    if gtype == GeomType.SPHERE:
        return size[0], size[0], size[0]
    if gtype == GeomType.CAPSULE:
        return size[0], size[0], size[1] + size[0]
    if gtype == GeomType.CYLINDER:
        return size[0], size[0], size[1]
    return size[0], size[1], size[2]


def _kappa(dx: float, dy: float, dz: float) -> float:
    """kappa along the first axis (symmetric in the other two), by the quadrature above."""
    invdx2, invdy2, invdz2 = 1.0 / (dx * dx), 1.0 / (dy * dy), 1.0 / (dz * dz)
    # non-dimensionalise l by a scale^2 of the axes for stability
    scale = (dx * dx * dx * dy * dz) ** 0.4
    kappa = 0.0
    for w, lam0, dl in zip(_KRONROD_W, _KRONROD_L, _KRONROD_D, strict=True):
        lam = scale * lam0
        ex = 1 + lam * invdx2
        denom = ex * math.sqrt(ex * (1 + lam * invdy2) * (1 + lam * invdz2))
        kappa += scale * dl / denom * w
    return kappa * invdx2


def geom_fluid(gtype: int, size, ellipsoid: bool, coef) -> list[float]:
    """The 12 values of ``geom_fluid`` for one geom: all zero unless ``ellipsoid``; else
    [1, the five ``fluidcoef``, virtual mass (3), virtual inertia (3)]."""
    if not ellipsoid:
        return [0.0] * NFLUID
    dx, dy, dz = semi_axes(gtype, size)
    volume = 4.0 / 3.0 * math.pi * dx * dy * dz
    # kappa is invariant to swapping its last two arguments
    kx, ky, kz = _kappa(dx, dy, dz), _kappa(dy, dz, dx), _kappa(dz, dx, dy)

    def inertia_factor(b2, c2, kb, kc):
        # (b^2 - c^2)^2 |kc - kb| / |2 (b^2 - c^2) + (b^2 + c^2)(kb - kc)|, clipped away from 0/0
        return (b2 - c2) ** 2 * abs(kc - kb) / max(_EPS, abs(2 * (b2 - c2) + (b2 + c2) * (kb - kc)))

    x2, y2, z2 = dx * dx, dy * dy, dz * dz
    ifac = (inertia_factor(y2, z2, ky, kz), inertia_factor(z2, x2, kz, kx), inertia_factor(x2, y2, kx, ky))
    mass = [volume * k / max(_EPS, 2 - k) for k in (kx, ky, kz)]
    inertia = [volume * f / 5 for f in ifac]
    return [1.0, *[float(c) for c in coef], *mass, *inertia]
