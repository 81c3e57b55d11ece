/* SPDX-License-Identifier: MIT */
/*
 * Round trip of the packed-record codec (format.h): N chunks of random
 * records - every field random, or equal to the previous record's, or a
 * small step from it, as real traces are - packed into a chunk-sized
 * buffer and decoded back; every record must come back bit for bit, and
 * every cut of a chunk must decode to a prefix and then stop.
 * Usage: prog_codec SEED CHUNKS [own]; prints "ok RECORDS BYTES HASH"
 * (HASH: FNV-1a of every packed byte, which pins the encoding itself) or
 * the first mismatch. With `own`, records also carry gpuspy's own time
 * after them (from a second generator, so that the records themselves are
 * the same): a quarter none, the rest kept from the last one or any time
 * up to GSPY_OWN_MAX and past it (packed as GSPY_OWN_MAX); it must come
 * back too.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuspy/format.h"

static uint64_t state, state2;

static uint64_t next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static uint64_t rnd(void)
{
	return next(&state);
}

/* gpuspy's own time after a record, from the second generator. */
static uint64_t own_after(uint64_t prev)
{
	uint64_t x = next(&state2);
	switch (x % 4) {
	case 0: return 0;
	case 1: return prev;
	case 2: return x >> 44; /* a walk's ticks: up to 2^20 */
	}
	return x >> 23; /* up to 2^41: past GSPY_OWN_MAX */
}

/* A field: often unchanged, often a small step, sometimes anything. */
static uint64_t field(uint64_t prev, unsigned bits)
{
	uint64_t mask = bits == 64 ? ~0ull : (1ull << bits) - 1;
	switch (rnd() % 4) {
	case 0: return prev;
	case 1: return (prev + rnd() % 100) & mask;
	case 2: return (prev - rnd() % 5) & mask;
	}
	return rnd() & mask;
}

static void make(struct gspy_record *r, const struct gspy_record *p)
{
	unsigned char bytes[sizeof(*r)];
	memcpy(bytes, p, sizeof(bytes));
	r->start = field(p->start, 64);
	r->end = rnd() % 8 ? r->start + rnd() % 100000 : field(p->end, 64);
	r->stream = field(p->stream, 64);
	uint32_t w[5], pw[5];
	memcpy(pw, &p->u, sizeof(pw));
	for (int i = 0; i < 5; i++)
		w[i] = (uint32_t)field(pw[i], 32);
	memcpy(&r->u, w, sizeof(w));
	r->stack_id = (uint32_t)field(p->stack_id, 32);
	r->result = (int32_t)field((uint32_t)p->result, 32);
	r->name_id = (uint32_t)field(p->name_id, 32);
	r->api = (uint16_t)field(p->api, 16);
	r->kind = (uint8_t)field(p->kind, 8);
	if (!r->kind) /* none: never written (a zero byte ends a chunk's records) */
		r->kind = GSPY_KIND_alloc;
	r->dir = (uint8_t)field(p->dir, 8);
	r->mem = (uint8_t)field(p->mem, 8);
	r->flags = (uint8_t)field(p->flags, 8);
	r->device = (int16_t)field((uint16_t)p->device, 16);
	(void)bytes;
}

int main(int argc, char **argv)
{
	if (argc < 3 || argc > 4)
		return 2;
	int with_own = argc == 4 && strcmp(argv[3], "own") == 0;
	state = strtoull(argv[1], NULL, 10) | 1;
	state2 = state * 0x9e3779b97f4a7c15ull | 1;
	long chunks = atol(argv[2]);
	enum { BODY = 65536 - GSPY_CHUNK_HEADER_SIZE, MAXREC = BODY / 2 };
	static uint8_t body[BODY];
	static struct gspy_record want[MAXREC];
	static uint64_t want_own[MAXREC];
	uint64_t total = 0, bytes = 0, hash = 0xcbf29ce484222325ull;
	for (long c = 0; c < chunks; c++) {
		struct gspy_record zero, r;
		struct gspy_pack_base base;
		memset(&zero, 0, sizeof(zero));
		memset(&base, 0, sizeof(base));
		size_t used = 0, n = 0;
		while (used + GSPY_PACKED_MAX <= BODY) {
			memset(&r, 0, sizeof(r));
			make(&r, n ? &want[n - 1] : &zero);
			uint64_t own = with_own ? own_after(n ? want_own[n - 1] : 0) : 0;
			want_own[n] = own < GSPY_OWN_MAX ? own : GSPY_OWN_MAX;
			want[n++] = r;
			size_t k = gspy_pack(body + used, &r, own, &base);
			if (k == 0 || k > GSPY_PACKED_MAX) {
				printf("chunk %ld record %zu: packed into %zu bytes\n", c, n - 1, k);
				return 1;
			}
			used += k;
		}
		/* The whole chunk, then a cut at a random point. */
		for (int pass = 0; pass < 2; pass++) {
			size_t end = pass ? rnd() % used : used, off = 0, i = 0, k;
			struct gspy_record got;
			uint64_t got_own = 0;
			memset(&got, 0, sizeof(got));
			while ((k = gspy_unpack(body + off, body + end, &got, &got_own)) != 0) {
				if (i >= n || memcmp(&got, &want[i], sizeof(got)) != 0 || got_own != want_own[i]) {
					printf("chunk %ld pass %d: record %zu differs after decoding\n", c, pass, i);
					return 1;
				}
				off += k;
				i++;
			}
			if (pass == 0 && (i != n || off != used)) {
				printf("chunk %ld: decoded %zu of %zu records, %zu of %zu bytes\n", c, i, n, off, used);
				return 1;
			}
			if (pass == 1 && off > end) {
				printf("chunk %ld: decoding read past the cut\n", c);
				return 1;
			}
		}
		total += n;
		bytes += used;
		for (size_t i = 0; i < used; i++)
			hash = (hash ^ body[i]) * 0x100000001b3ull;
	}
	printf("ok %llu %llu %016llx\n", (unsigned long long)total, (unsigned long long)bytes,
	       (unsigned long long)hash);
	return 0;
}
