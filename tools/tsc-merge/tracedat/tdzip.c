// SPDX-License-Identifier: GPL-2.0
/*
 * tdzip.c: read a compressed block of a version 7 trace.dat the way
 * libtracecmd 1.3.1 does, so that what is inside can be checked before
 * libtracecmd and libtraceevent see it.
 *
 * A compressed section, and each chunk of a CPU's compressed data, is a
 * block: u32 compressed size, u32 size once decompressed, then the
 * compressed bytes, for the algorithm the file header names (trace-cmd
 * writes "zstd" or "zlib"). libtracecmd mallocs both sizes before it reads
 * a byte, so the claimed size is bounded here by the bytes the block
 * really has in the file: trace metadata and ring-buffer pages compress
 * about 10:1, and no input the file can hold decompresses to more than
 * TD_MAX_RATIO times its size.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

#include "tracedat/tdfile.h"

#define BLOCK_HEADER_SIZE	8

/* The algorithm a file header's compression name gives. */
enum td_zip td_zip_of(const char *name)
{
	if (!strcmp(name, "none"))
		return TD_ZIP_NONE;
	if (!strcmp(name, "zstd"))
		return TD_ZIP_ZSTD;
	if (!strcmp(name, "zlib"))
		return TD_ZIP_ZLIB;
	return TD_ZIP_UNKNOWN;
}

/* @in into @out, as libtracecmd's zstd and zlib plugins do; -1 on damage. */
static int64_t uncompress_bytes(const struct td_file *f, const void *in, uint32_t in_len,
				void *out, uint32_t out_len)
{
	unsigned long len = out_len;
	size_t ret;

	switch (f->zip) {
	case TD_ZIP_ZSTD:
		ret = ZSTD_decompress(out, out_len, in, in_len);
		return ZSTD_isError(ret) ? -1 : (int64_t)ret;
	case TD_ZIP_ZLIB:
		return uncompress(out, &len, in, in_len) == Z_OK ? (int64_t)len : -1;
	default:
		return -1;
	}
}

/*
 * The block at @off, with @avail bytes of the file for it, decompressed
 * into exactly the size it claims (@exact) or into the larger of its two
 * sizes: *@len gets what it decompressed to, *@used its bytes in the
 * file. NULL, the damage named, when it does not decompress.
 */
static unsigned char *uncompress_block(const struct td_file *f, uint64_t off, uint64_t avail,
				       bool exact, uint64_t *len, uint64_t *used)
{
	unsigned char hdr[BLOCK_HEADER_SIZE], *in, *out;
	uint32_t in_len, out_len, room;
	int64_t n;

	if (avail < sizeof(hdr) || td_read_at(f, off, hdr, sizeof(hdr))) {
		td_damaged(f, "a compressed block at %" PRIu64 " is cut short", off);
		return NULL;
	}
	in_len = td_number(f, hdr, 4);
	out_len = td_number(f, hdr + 4, 4);
	if (in_len > avail - sizeof(hdr)) {
		td_damaged(f, "a compressed block at %" PRIu64 " claims %" PRIu32 " bytes where %" PRIu64 " are left",
			   off, in_len, avail - sizeof(hdr));
		return NULL;
	}
	if (out_len > (uint64_t)in_len * TD_MAX_RATIO) {
		td_damaged(f, "a compressed block of %" PRIu32 " bytes at %" PRIu64 " claims to hold %" PRIu32,
			   in_len, off, out_len);
		return NULL;
	}
	room = exact || out_len > in_len ? out_len : in_len;
	in = xcalloc(in_len ? in_len : 1, 1);
	out = xcalloc((size_t)room + 1, 1);	/* NUL-terminated for text */
	if (td_read_at(f, off + sizeof(hdr), in, in_len))
		goto fail;
	n = uncompress_bytes(f, in, in_len, out, room);
	if (n < 0 || (exact && n != out_len)) {
		td_damaged(f, "the compressed block at %" PRIu64 " does not decompress to the %" PRIu32 " bytes it claims",
			   off, out_len);
		goto fail;
	}
	free(in);
	*len = n;
	*used = sizeof(hdr) + in_len;
	return out;
fail:
	free(in);
	free(out);
	return NULL;
}

/*
 * A compressed section's block: libtracecmd decompresses it into the
 * larger of its two sizes and reads what came out.
 */
unsigned char *td_uncompress_block(const struct td_file *f, uint64_t off, uint64_t avail,
				   uint64_t *len)
{
	uint64_t used;

	return uncompress_block(f, off, avail, false, len, &used);
}

/*
 * A chunk of a CPU's compressed data: libtracecmd decompresses it into
 * exactly the size it claims, and pages follow one another on that size.
 */
unsigned char *td_uncompress_chunk(const struct td_file *f, uint64_t off, uint64_t avail,
				   uint64_t *len, uint64_t *used)
{
	return uncompress_block(f, off, avail, true, len, used);
}

/* A decompressed block, read with the same calls as the file it came from. */
void td_open_block(struct td_file *block, const struct td_file *f, const unsigned char *data,
		   uint64_t len)
{
	*block = *f;
	block->fd = -1;
	block->mem = data;
	block->size = len;
}
