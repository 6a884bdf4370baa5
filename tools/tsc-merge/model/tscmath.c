// SPDX-License-Identifier: GPL-2.0
/*
 * tscmath.c: the exact inverse of the guest TSC formula, in integers.
 *
 * guest_tsc = ((host_tsc * mult) >> frac) + offset, all modulo 2^64 as the
 * CPU computes it: the product has 128 bits, a negative offset is its two's
 * complement. No floating point: a double has 53 bits of mantissa and a TSC
 * already needs 40 or more, so a scaled conversion through it drifts.
 */
#include "model/model.h"

/*
 * The smallest host TSC at which the guest reads @guest or more. With a
 * multiplier below 1 << frac several host ticks give one guest value and
 * the first is the moment the guest value began; above it, a guest value
 * the scaling steps over maps to the first tick past it. Returns false when
 * no 64-bit host TSC gives that value (a zero multiplier, or beyond 2^64).
 */
bool tsc_guest_to_host(uint64_t guest, uint64_t mult, unsigned int frac,
		       uint64_t offset, uint64_t *host)
{
	uint64_t scaled = guest - offset;
	unsigned __int128 h;

	if (!mult || frac > 63)
		return false;
	/* No scaling, the common case: skip the 128-bit division. */
	if (mult == 1ull << frac) {
		*host = scaled;
		return true;
	}
	h = (((unsigned __int128)scaled << frac) + mult - 1) / mult;
	if (h > UINT64_MAX)
		return false;
	*host = (uint64_t)h;
	return true;
}
