"""Integer operations that keep their operands' width inside numba code.

Numba promotes ``int16 + int16`` to a 64-bit integer, which stops LLVM from
vectorising a lane loop into 16-bit SIMD. These intrinsics compute in the
operands' own type (wrapping), so a loop over lanes becomes ``vpaddw`` /
``vpmaxsw`` on 32 lanes at once.
"""

from __future__ import annotations

from numba import types
from numba.extending import intrinsic


def _binary(emit):
    @intrinsic
    def op(typingctx, a, b):
        if not isinstance(a, types.Integer) or a != b:
            return None
        return a(a, b), lambda context, builder, sig, args: emit(builder, *args)
    return op


iadd = _binary(lambda b, x, y: b.add(x, y))
isub = _binary(lambda b, x, y: b.sub(x, y))
ior = _binary(lambda b, x, y: b.or_(x, y))
ishl = _binary(lambda b, x, y: b.shl(x, y))
imax = _binary(lambda b, x, y: b.select(b.icmp_signed(">", x, y), x, y))
#: 1 where ``x > y``, else 0, in the operands' type.
igt = _binary(lambda b, x, y: b.zext(b.icmp_signed(">", x, y), x.type))
#: 1 where ``x == y``, else 0, in the operands' type.
ieq = _binary(lambda b, x, y: b.zext(b.icmp_signed("==", x, y), x.type))


@intrinsic
def isel(typingctx, cond, a, b):
    """``a`` where ``cond != 0``, else ``b`` (all of one integer type)."""
    if not (isinstance(a, types.Integer) and a == b == cond):
        return None

    def codegen(context, builder, sig, args):
        c, x, y = args
        return builder.select(builder.icmp_signed("!=", c, c.type(0)), x, y)
    return a(a, a, a), codegen


@intrinsic
def nibbles(typingctx, lo, hi):
    """One byte from two 4-bit values: ``lo | hi << 4``."""
    if not (isinstance(lo, types.Integer) and lo == hi):
        return None

    def codegen(context, builder, sig, args):
        x, y = args
        packed = builder.or_(x, builder.shl(y, y.type(4)))
        return builder.trunc(packed, context.get_value_type(types.uint8))
    return types.uint8(lo, hi), codegen
