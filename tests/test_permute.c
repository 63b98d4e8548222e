/* test_permute: the permutation engine against a naive loop, for every
 * permutation of ranks 1-5 (and 6 on a small box), a sample at ranks 7-8,
 * odd sizes; one and two sources (compact, strided and broadcast layouts);
 * vector and scalar kernels; one and two threads. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "kernels.h"
#include "permute.h"
#include "team.h"

/* A linear congruential generator (Knuth's MMIX constants), high bits. */
static uint64_t rng = 88172645463325252ULL;

static uint64_t next(void)
{
    rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return rng >> 33;
}

/* n elements of dtype dt (both parts of a complex one) in [-1, 1]. */
static void fill(eb_dtype dt, void *x, int64_t n)
{
    int64_t m = n * (eb_dtype_is_complex(dt) ? 2 : 1);
    for (int64_t i = 0; i < m; i++) {
        double v = (double)(next() % 2001) / 1000.0 - 1.0;
        if (eb_dtype_real(dt) == EB_F32)
            ((float *)x)[i] = (float)v;
        else
            ((double *)x)[i] = v;
    }
}

/* The naive element: o = a, or o = a * b in dtype dt (complex: (ac - bd)
 * + (ad + bc)i, each product rounded once, as the engine's kernels). */
static void elem(eb_dtype dt, void *o, const void *a, const void *b)
{
    if (!b) {
        memcpy(o, a, eb_dtype_size(dt));
        return;
    }
    switch (dt) {
    case EB_F64:
        *(double *)o = *(const double *)a * *(const double *)b;
        break;
    case EB_F32:
        *(float *)o = *(const float *)a * *(const float *)b;
        break;
    case EB_C128: {
        const double *x = a, *y = b;
        double *z = o;
        z[0] = x[0] * y[0] - x[1] * y[1];
        z[1] = x[0] * y[1] + x[1] * y[0];
        break;
    }
    default: {
        const float *x = a, *y = b;
        float *z = o;
        z[0] = x[0] * y[0] - x[1] * y[1];
        z[1] = x[0] * y[1] + x[1] * y[0];
        break;
    }
    }
}

/* Compact row-major strides of `shape` in the dim order `ord` (ord[0]
 * outermost), scaled by `gap` on the innermost dim (a strided view). */
static int64_t strides_in_order(int r, const int64_t *shape, const int *ord,
                                int64_t gap, int64_t *st)
{
    int64_t s = gap;
    for (int k = r - 1; k >= 0; k--) {
        st[ord[k]] = s;
        s *= shape[ord[k]];
    }
    return s;
}

/* out over `shape` (box dims 0..r-1) compact in dim order oord; sources
 * laid out by their strides; scalar: 1 = scalar kernels, 2 = streamed
 * rows and GENERIC copies (3: both). Returns 1 when the engine agrees with the
 * naive loop exactly (a permutation and one multiply are exact). */
static eb_dtype cur_dt; /* the dtype run_case runs in */

static int run_case(int r, const int64_t *shape, const int *oord,
                    const int64_t *s0, const int64_t *s1, int64_t n0,
                    int64_t n1, eb_team *team, int scalar)
{
    eb_dtype dt = cur_dt;
    size_t es = eb_dtype_size(dt);
    int64_t so[EB_MAX_RANK];
    int64_t n = strides_in_order(r, shape, oord, 1, so);
    char *x0 = malloc((size_t)n0 * es);
    char *x1 = s1 ? malloc((size_t)n1 * es) : NULL;
    char *out = malloc((size_t)n * es + 1);
    char *ref = malloc((size_t)n * es + 1);
    fill(dt, x0, n0);
    if (x1)
        fill(dt, x1, n1);
    memset(out, 0x7f, (size_t)n * es + 1); /* + 1: a guard byte */
    memset(ref, 0x7f, (size_t)n * es + 1);
    int64_t idx[EB_MAX_RANK] = {0};
    for (int64_t e = 0; e < n; e++) {
        int64_t rem = e, oo = 0, o0 = 0, o1 = 0;
        for (int d = r - 1; d >= 0; d--) {
            idx[d] = rem % shape[d];
            rem /= shape[d];
            oo += idx[d] * so[d];
            o0 += idx[d] * s0[d];
            if (s1)
                o1 += idx[d] * s1[d];
        }
        elem(dt, ref + oo * (int64_t)es, x0 + o0 * (int64_t)es,
             x1 ? x1 + o1 * (int64_t)es : NULL);
    }
    eb_perm p;
    eb_perm_plan_dt(&p, dt, r, shape, so, s0, s1);
    p.scalar = scalar & 1;
    if (scalar & 2) /* non-temporal stores on arrays too small for them */
        p.stream = p.mode == EB_PERM_ROW || p.mode == EB_PERM_XROW ||
                   (p.mode == EB_PERM_GENERIC && p.nsrc == 1);
    eb_perm_exec(&p, x0, x1, out, team);
    int ok = memcmp(out, ref, (size_t)n * es + 1) == 0;
    free(x0);
    free(x1);
    free(out);
    free(ref);
    return ok;
}

/* Every permutation of 0..r-1 in lexicographic order: next one in place,
 * 0 after the last. */
static int next_perm(int *a, int r)
{
    int i = r - 2;
    while (i >= 0 && a[i] >= a[i + 1])
        i--;
    if (i < 0)
        return 0;
    int j = r - 1;
    while (a[j] <= a[i])
        j--;
    int t = a[i];
    a[i] = a[j];
    a[j] = t;
    for (int l = i + 1, h = r - 1; l < h; l++, h--) {
        t = a[l];
        a[l] = a[h];
        a[h] = t;
    }
    return 1;
}

static const int64_t shapes[9][8] = {
    {0},
    {37},
    {37, 21},
    {19, 5, 23},
    {7, 5, 3, 9},
    {5, 3, 7, 3, 5},
    {3, 5, 3, 3, 5, 3},
    {3, 3, 5, 3, 3, 3, 5},
    {3, 3, 3, 5, 3, 3, 3, 3},
};

/* One source: the input compact in natural order, the output in every
 * (or a sampled) permutation. */
static void test_one_source(int r, eb_team *team, int scalar)
{
    int ord[8];
    for (int d = 0; d < r; d++)
        ord[d] = d;
    int64_t s0[EB_MAX_RANK];
    const int64_t *shape = shapes[r];
    int64_t n0 = strides_in_order(r, shape, ord, 1, s0);
    int cases = 0, good = 0, k = 0;
    do {
        /* Ranks 7 and 8: every 97th and 997th permutation. */
        if ((r == 7 && k % 97) || (r == 8 && k % 997)) {
            k++;
            continue;
        }
        k++;
        cases++;
        good += run_case(r, shape, ord, s0, NULL, n0, 0, team, scalar);
    } while (next_perm(ord, r));
    EB_CHECK(good == cases, "%s rank %d (%d threads, scalar %d): %d of %d "
             "permutations right", eb_dtype_name(cur_dt), r,
             eb_team_size(team), scalar, good, cases);
}

/* Two sources: x0 compact in a random order with a gap of 2 on its
 * innermost dim, x1 compact in another random order or broadcast along a
 * random subset of dims. */
static void test_two_sources(int r, int cases, eb_team *team, int scalar)
{
    const int64_t *shape = shapes[r];
    int good = 0;
    for (int c = 0; c < cases; c++) {
        int o[3][8];
        for (int q = 0; q < 3; q++) {
            for (int d = 0; d < r; d++)
                o[q][d] = d;
            for (int d = r - 1; d > 0; d--) {
                int e = (int)(next() % (uint64_t)(d + 1)), t = o[q][d];
                o[q][d] = o[q][e];
                o[q][e] = t;
            }
        }
        int64_t s0[EB_MAX_RANK], s1[EB_MAX_RANK];
        int64_t n0 = strides_in_order(r, shape, o[1], 2, s0);
        int64_t n1 = strides_in_order(r, shape, o[2], 1, s1);
        if (c % 2)
            for (int d = 0; d < r; d++)
                if (next() % 2)
                    s1[d] = 0;
        good += run_case(r, shape, o[0], s0, s1, n0, n1, team, scalar);
    }
    EB_CHECK(good == cases, "%s rank %d two sources (%d threads, scalar "
             "%d): %d of %d right", eb_dtype_name(cur_dt), r,
             eb_team_size(team), scalar, good, cases);
}

/* Shapes large enough for the team to split them. */
static void test_large(eb_team *team)
{
    static const int64_t big[3] = {67, 33, 41};
    static const int perms[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2},
                                    {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
    int ord[3] = {0, 1, 2}, good = 0;
    int64_t s0[EB_MAX_RANK], s1[EB_MAX_RANK];
    int64_t n0 = strides_in_order(3, big, ord, 1, s0);
    for (int k = 0; k < 6; k++) {
        good += run_case(3, big, perms[k], s0, NULL, n0, 0, team, 0);
        int64_t n1 = strides_in_order(3, big, perms[(k + 1) % 6], 1, s1);
        good += run_case(3, big, perms[k], s0, s1, n0, n1, team, 0);
        s1[k % 3] = 0;
        good += run_case(3, big, perms[k], s0, s1, n0, n1, team, 0);
    }
    /* One long row (an elementwise multiply, a copy): split too. */
    int64_t len = 100003, one = 1;
    good += run_case(1, &len, ord, &one, &one, len, len, team, 0);
    good += run_case(1, &len, ord, &one, NULL, len, 0, team, 0);
    int64_t zero = 0;
    good += run_case(1, &len, ord, &one, &one, len, len, team, 2);
    good += run_case(1, &len, ord, &zero, &one, 1, len, team, 2);
    good += run_case(1, &len, ord, &one, NULL, len, 0, team, 2);
    EB_CHECK(good == 23, "%s large box (%d threads): %d of 23 right",
             eb_dtype_name(cur_dt), eb_team_size(team), good);
}

/* The plan's choices on layouts whose answer is known. */
static void test_modes(void)
{
    eb_perm p;
    int64_t shape[2] = {64, 32}, id[2] = {32, 1}, tr[2] = {1, 64},
            bc[2] = {0, 1};
    eb_perm_plan(&p, 2, shape, id, id, NULL);
    EB_CHECK(p.mode == EB_PERM_ROW && p.rank == 1 && p.shape[0] == 2048,
             "a copy merges into one row (mode %d rank %d)", p.mode, p.rank);
    int64_t len = 1 << 20, one = 1;
    eb_perm_plan(&p, 1, &len, &one, &one, &one);
    EB_CHECK(p.mode == EB_PERM_ROW && p.split == 0 && p.block[0] == 4096,
             "a long row is cut for the team (split %d block %lld)", p.split,
             (long long)p.block[0]);
    eb_perm_plan(&p, 2, shape, id, tr, NULL);
    EB_CHECK(p.mode == EB_PERM_TILE4 && p.block[0] == 32 && p.block[1] == 32,
             "a transpose runs in 32 x 32 tiles (mode %d)", p.mode);
    eb_perm_plan(&p, 2, shape, id, bc, id);
    EB_CHECK(p.mode == EB_PERM_ROW, "a broadcast multiply is rows (mode %d)",
             p.mode);
    int64_t s3[3] = {3, 3, 3}, o3[3] = {9, 3, 1}, i3[3] = {1, 3, 9};
    eb_perm_plan(&p, 3, s3, o3, i3, NULL);
    EB_CHECK(p.mode == EB_PERM_GENERIC, "short dims take the generic tile "
             "(mode %d)", p.mode);
    EB_CHECK(eb_perm_bytes(&p) == 27 * 16, "bytes %g", eb_perm_bytes(&p));
}

/* A ROW plan whose tile repeats rows of `row` elements at `places` places
 * of out streams when the places are at most 4 or the rows hold 512
 * bytes; in float64 the plan must be that ROW tile with nrep repeats. */
static void check_places(eb_dtype dt, int rank, const int64_t *sh,
                         const int64_t *o, const int64_t *a, const int64_t *b,
                         int64_t row, int places, int nrep)
{
    int64_t es = (int64_t)eb_dtype_size(dt);
    int want = places <= 4 || row * es >= 512;
    eb_perm p;
    eb_perm_plan_dt(&p, dt, rank, sh, o, a, b);
    EB_CHECK(p.mode != EB_PERM_ROW || p.nrep == 0 || p.stream == want,
             "%s: rows of %lld repeated at %d places (mode %d nrep %d "
             "stream %d)", eb_dtype_name(dt), (long long)row, places, p.mode,
             p.nrep, p.stream);
    if (dt == EB_F64)
        EB_CHECK(p.mode == EB_PERM_ROW && p.nrep == nrep && p.stream == want,
                 "float64: rows of %lld at %d places, stream %d (mode %d "
                 "nrep %d stream %d)", (long long)row, places, want, p.mode,
                 p.nrep, p.stream);
}

/* The plan's choices per dtype are in bytes: a transpose's tile is 256
 * bytes a side (64 floats, 32 doubles or complex64, 16 complex128), a long
 * row is cut every 32 KiB, a copy merges into one row. */
static void test_modes_dt(eb_dtype dt)
{
    eb_perm p;
    int64_t es = (int64_t)eb_dtype_size(dt), side = 256 / es;
    int64_t shape[2] = {64, 64}, id[2] = {64, 1}, tr[2] = {1, 64};
    eb_perm_plan_dt(&p, dt, 2, shape, id, tr, NULL);
    EB_CHECK(p.dt == dt && p.mode == EB_PERM_TILE4 && p.block[0] == side &&
                 p.block[1] == side,
             "%s: a transpose runs in %lld-element tiles (mode %d block "
             "%lld)", eb_dtype_name(dt), (long long)side, p.mode,
             (long long)p.block[0]);
    eb_perm_plan_dt(&p, dt, 2, shape, id, tr, id);
    EB_CHECK(p.mode == EB_PERM_TILE4, "%s: a multiply by a transpose runs "
             "in tiles (mode %d)", eb_dtype_name(dt), p.mode);
    int64_t len = 1 << 20, one = 1;
    eb_perm_plan_dt(&p, dt, 1, &len, &one, &one, &one);
    EB_CHECK(p.mode == EB_PERM_ROW && p.block[0] == 32768 / es,
             "%s: a long row is cut every 32 KiB (block %lld)",
             eb_dtype_name(dt), (long long)p.block[0]);
    EB_CHECK(eb_perm_bytes(&p) == 3.0 * (double)len * (double)es,
             "%s: bytes of a multiply %g", eb_dtype_name(dt),
             eb_perm_bytes(&p));
    /* Non-temporal stores by bytes, the same in every dtype: a multiply
     * touching 48 MiB (each array 16 MiB) streams, one touching 24 MiB
     * does not; a copy with a 32 MiB output streams. */
    int64_t big = (16 << 20) / es, small = (8 << 20) / es, copy = (32 << 20) / es;
    eb_perm_plan_dt(&p, dt, 1, &big, &one, &one, &one);
    EB_CHECK(p.mode == EB_PERM_ROW && p.stream == 1,
             "%s: a multiply touching 48 MiB streams (stream %d)",
             eb_dtype_name(dt), p.stream);
    eb_perm_plan_dt(&p, dt, 1, &small, &one, &one, &one);
    EB_CHECK(p.stream == 0, "%s: a multiply touching 24 MiB does not "
             "stream (stream %d)", eb_dtype_name(dt), p.stream);
    eb_perm_plan_dt(&p, dt, 1, &copy, &one, &one, NULL);
    EB_CHECK(p.stream == 1, "%s: a 32 MiB copy streams (stream %d)",
             eb_dtype_name(dt), p.stream);
    /* A GENERIC copy (15 dims of 3, all but the innermost reversed: 57
     * MiB or more in every dtype; the innermost 3, shared, leaves no RUNS
     * tile) writes its runs along out, under 2 KiB, through the cache; a
     * multiply of the same layouts does not stream either. A big GENERIC
     * copy whose runs along out hold 2 KiB or more streams them (out rows
     * of 50 elements, x0's unit dim of 5 and a dim of 10 far apart). */
    {
        int64_t sh[3] = {177147, 10, 5}, o3[3] = {50, 5, 1},
                x3[3] = {5, 885735, 1};
        eb_perm_plan_dt(&p, dt, 3, sh, o3, x3, NULL);
        int64_t run = 1;
        for (int d = p.rank - 1; d >= 0 && p.stride[0][d] == run; d--)
            run *= p.block[d];
        EB_CHECK(p.mode != EB_PERM_GENERIC ||
                     p.stream == (run * p.es >= 2048),
                 "%s: a big GENERIC copy streams runs of 2 KiB or more "
                 "(run %lld bytes, stream %d)", eb_dtype_name(dt),
                 (long long)(run * p.es), p.stream);
        if (dt == EB_F64)
            EB_CHECK(p.mode == EB_PERM_GENERIC && p.stream == 1,
                     "float64: a big GENERIC copy with runs of %lld bytes "
                     "streams (mode %d stream %d)",
                     (long long)(run * p.es), p.mode, p.stream);
    }
    /* A ROW tile repeated over a source's next dims writes out at as many
     * places in turn: streamed at up to 4 places, or in rows of 512 bytes
     * or more (gm_queen's outer products: rows of 27 at 9 places, of 81
     * at 3). */
    {
        int64_t sh[4] = {3, 3, 177147, 27},
                o4[4] = {14348907, 4782969, 27, 1}, a4[4] = {3, 1, 0, 0},
                b4[4] = {27, 81, 243, 1};
        check_places(dt, 4, sh, o4, a4, b4, 27, 9, 2);
        int64_t sh5[5] = {3, 3, 9, 6561, 81},
                o5[5] = {14348907, 4782969, 531441, 81, 1},
                a5[5] = {3, 1, 0, 0, 0},
                b5[5] = {1594323, 81, 4782969, 243, 1};
        check_places(dt, 5, sh5, o5, a5, b5, 81, 3, 1);
    }
    /* Rows of 16 elements are ROW rows when they span more than a cache
     * line (float64, complex), GENERIC tiles when one line (float32);
     * rows of 17 and more are ROW rows in every dtype. */
    {
        int64_t sh16[2] = {64, 16}, o16[2] = {16, 1}, x16[2] = {32, 1},
                sh17[2] = {64, 17}, o17[2] = {17, 1}, x17[2] = {32, 1};
        eb_perm_plan_dt(&p, dt, 2, sh16, o16, x16, NULL);
        EB_CHECK((p.mode == EB_PERM_ROW) == (16 * es > 64),
                 "%s: rows of 16 (%lld bytes): mode %d", eb_dtype_name(dt),
                 (long long)(16 * es), p.mode);
        eb_perm_plan_dt(&p, dt, 2, sh17, o17, x17, NULL);
        EB_CHECK(p.mode == EB_PERM_ROW, "%s: rows of 17: mode %d",
                 eb_dtype_name(dt), p.mode);
    }
    int64_t threes[15], rev[15], nat[15], q = 1;
    for (int d = 14; d >= 0; d--) {
        threes[d] = 3;
        nat[d] = q;
        q *= 3;
    }
    for (int d = 0; d < 14; d++)
        rev[d] = nat[13 - d] * 3;
    rev[14] = 1;
    eb_perm_plan_dt(&p, dt, 15, threes, nat, rev, NULL);
    EB_CHECK(p.mode == EB_PERM_GENERIC && p.stream == 0,
             "%s: a large GENERIC copy in runs under 2 KiB does not "
             "stream (mode %d stream %d)", eb_dtype_name(dt), p.mode,
             p.stream);
    eb_perm_plan_dt(&p, dt, 15, threes, nat, rev, nat);
    EB_CHECK(p.mode == EB_PERM_GENERIC && p.stream == 0,
             "%s: a large GENERIC multiply does not stream (mode %d "
             "stream %d)", eb_dtype_name(dt), p.mode, p.stream);
}

/* TILE4 multiplies: out row-major, x0 transposed (the tile's source),
 * x1 read directly, broadcast along out's rows or transposed too; sizes
 * with edges beyond every dtype's register blocks. */
static void test_tile_mul(eb_team *team)
{
    static const int64_t shape[2] = {37, 45};
    int nat[2] = {0, 1}, tr[2] = {1, 0}, good = 0, cases = 0;
    int64_t s0[2], s1[3][2];
    int64_t n0 = strides_in_order(2, shape, tr, 1, s0);
    int64_t n1 = strides_in_order(2, shape, nat, 1, s1[0]);
    strides_in_order(2, shape, tr, 1, s1[1]);
    s1[2][0] = 1;
    s1[2][1] = 0;
    for (int l = 0; l < 3; l++)
        for (int scalar = 0; scalar <= 1; scalar++) {
            eb_perm p;
            eb_perm_plan_dt(&p, cur_dt, 2, shape, (int64_t[]){45, 1}, s0,
                            s1[l]);
            cases += 2;
            good += p.mode == EB_PERM_TILE4;
            good += run_case(2, shape, nat, s0, s1[l], n0, n1, team, scalar);
        }
    EB_CHECK(good == cases, "%s tiled multiplies (%d threads): %d of %d "
             "right", eb_dtype_name(cur_dt), eb_team_size(team), good,
             cases);
}

/* RUNS tiles: x0's innermost dims (several short ones, or one long one
 * cut into blocks with an edge) against out's innermost dim, with the
 * tile repeated over out's next short dims; and short innermost dims
 * shared by both arrays, moved as one wide element. Each layout's mode is
 * checked where the dtype's vectors fit it; every result bit for bit. */
static void test_runs(eb_team *team)
{
    static const struct {
        int r;
        int64_t shape[8];
        int ord[8];   /* x0's dim order, outermost first */
        int runs_es;  /* element sizes for which the plan must be RUNS */
    } cs[] = {
        /* a run of 3 x 3 against out's 45 (gm_queen-like 3s) */
        {4, {7, 3, 3, 45}, {0, 3, 2, 1}, 4 | 8 | 16},
        /* one long run in blocks (301 = two blocks of float64 + edge)
         * against out's 6 (too short for TILE4 but in float32, whose
         * vectors of 8 are too long) */
        {3, {5, 301, 6}, {0, 2, 1}, 8},
        /* the team splits the run's blocks */
        {3, {171, 301, 6}, {0, 2, 1}, 8},
        /* out's innermost 4 against a run of 64; repeats over 2 x 8 x 3 */
        {5, {3, 2, 8, 64, 4}, {2, 4, 0, 1, 3}, 8},
        /* shared innermost 2: pairs moved as one element (float64: 16
         * bytes, float32: 8), then a run of 2 x 3 against out's 16 */
        {5, {5, 2, 3, 16, 2}, {0, 3, 2, 1, 4}, 4 | 8},
        /* tiles of one vector's block (a run of 4 doubles, 8 floats or
         * 2 complex128 against out's innermost of as many) repeated over
         * out's next dim: lm's (l, C) blocks of 4 x 4 */
        {4, {7, 4, 5, 4}, {2, 0, 3, 1}, 8},
        {4, {3, 8, 5, 8}, {2, 0, 3, 1}, 4},
        {4, {7, 2, 5, 2}, {2, 0, 3, 1}, 16},
        /* rank 8, every dim short, x0 reversed */
        {8, {3, 2, 3, 2, 5, 2, 3, 9}, {7, 6, 5, 4, 3, 2, 1, 0}, 4 | 8 | 16},
    };
    int n = (int)(sizeof cs / sizeof cs[0]), good = 0, cases = 0;
    int es = (int)eb_dtype_size(cur_dt);
    for (int c = 0; c < n; c++) {
        int r = cs[c].r, nat[8];
        for (int d = 0; d < r; d++)
            nat[d] = d;
        int64_t s0[EB_MAX_RANK], so[EB_MAX_RANK];
        int64_t n0 = strides_in_order(r, cs[c].shape, cs[c].ord, 1, s0);
        strides_in_order(r, cs[c].shape, nat, 1, so);
        eb_perm p;
        eb_perm_plan_dt(&p, cur_dt, r, cs[c].shape, so, s0, NULL);
        if (cs[c].runs_es & es) {
            cases++;
            good += p.mode == EB_PERM_RUNS;
            if (p.mode != EB_PERM_RUNS)
                fprintf(stderr, "  case %d: mode %d\n", c, (int)p.mode);
        }
        for (int scalar = 0; scalar <= 1; scalar++) {
            cases++;
            good += run_case(r, cs[c].shape, nat, s0, NULL, n0, 0, team,
                             scalar);
        }
    }
    /* Every permutation of a rank-6 box with 2s (shared short innermost
     * dims, widened or not, runs of 2s and 3s). */
    static const int64_t box[6] = {2, 3, 2, 5, 2, 2};
    int ord[6] = {0, 1, 2, 3, 4, 5}, perms = 0, right = 0;
    int64_t s0[EB_MAX_RANK];
    int64_t n0 = strides_in_order(6, box, ord, 1, s0);
    do {
        perms++;
        right += run_case(6, box, ord, s0, NULL, n0, 0, team, 0);
    } while (next_perm(ord, 6));
    EB_CHECK(good == cases && right == perms,
             "%s runs tiles (%d threads): %d of %d layouts, %d of %d "
             "permutations of 2s right", eb_dtype_name(cur_dt),
             eb_team_size(team), good, cases, right, perms);
}

/* RUNS tiles of multiplies (out in natural order): by a transpose (x0
 * laid out as out, read along out's run), an outer product whose x0 is
 * constant along out's two innermost dims and not beyond (out's run cut
 * to them, x0 broadcast), both sources in the same scrambled order (x1
 * transposed as x0 is), and the first large enough to prefetch the next
 * tiles (4.3 MB in float64) and split over the team. Odd dims leave runs
 * that are not whole vectors. Modes checked in float64; every dtype,
 * vector and scalar kernels, bit for bit. */
static void test_runs_two(eb_team *team)
{
    static const struct {
        int r;
        int64_t shape[12];
        int ord1[12];  /* x1's dim order, outermost first */
        int x0;        /* 0: as out; 1: out without its two innermost dims;
                        * 2: as x1 */
        int tsrc, how; /* expected in float64 */
    } cs[] = {
        {6, {3, 5, 9, 3, 7, 3}, {5, 2, 0, 4, 1, 3}, 0, 2, EB_RUNS_DIRECT},
        {6, {3, 5, 9, 3, 2, 3}, {5, 2, 0, 4, 1, 3}, 1, 2, EB_RUNS_BCAST},
        {6, {3, 5, 9, 3, 7, 3}, {5, 2, 0, 4, 1, 3}, 2, 1, EB_RUNS_TRANS},
        {12, {3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3},
         {11, 2, 9, 0, 4, 5, 10, 3, 8, 1, 6, 7}, 0, 2, EB_RUNS_DIRECT},
    };
    int n = (int)(sizeof cs / sizeof cs[0]), good = 0, cases = 0;
    for (int c = 0; c < n; c++) {
        int r = cs[c].r, nat[12];
        for (int d = 0; d < r; d++)
            nat[d] = d;
        int64_t s0[EB_MAX_RANK], s1[EB_MAX_RANK], so[EB_MAX_RANK];
        int64_t n1 = strides_in_order(r, cs[c].shape, cs[c].ord1, 1, s1);
        int64_t n0 = strides_in_order(r, cs[c].shape, nat, 1, so);
        if (cs[c].x0 == 1) {
            n0 = strides_in_order(r - 2, cs[c].shape, nat, 1, s0);
            s0[r - 2] = s0[r - 1] = 0;
        } else if (cs[c].x0 == 2) {
            n0 = n1;
            memcpy(s0, s1, sizeof s1);
        } else {
            memcpy(s0, so, sizeof so);
        }
        eb_perm p;
        eb_perm_plan_dt(&p, cur_dt, r, cs[c].shape, so, s0, s1);
        if (cur_dt == EB_F64) {
            cases++;
            good += p.mode == EB_PERM_RUNS && p.tsrc == cs[c].tsrc &&
                    p.how == cs[c].how;
            if (p.mode != EB_PERM_RUNS || p.tsrc != cs[c].tsrc ||
                p.how != cs[c].how)
                fprintf(stderr, "  case %d: mode %d tsrc %d how %d\n", c,
                        (int)p.mode, p.tsrc, p.how);
        }
        for (int scalar = 0; scalar <= 1; scalar++) {
            cases++;
            good += run_case(r, cs[c].shape, nat, s0, s1, n0, n1, team,
                             scalar);
        }
    }
    EB_CHECK(good == cases, "%s runs tiles of multiplies (%d threads): %d "
             "of %d right", eb_dtype_name(cur_dt), eb_team_size(team), good,
             cases);
}

/* ROW tiles repeated over a scattered source's next contiguous dims: out
 * and x1 in natural order, x0 with the rows innermost but its other dims
 * in another order; a copy, a multiply and a multiply by a broadcast. */
static void test_row_reps(eb_team *team)
{
    static const int64_t shape[5] = {45, 3, 4, 7, 37}; /* 1 MiB: split */
    int nat[5] = {0, 1, 2, 3, 4}, ord[5] = {3, 0, 2, 1, 4};
    int64_t s0[EB_MAX_RANK], s1[EB_MAX_RANK], bc[EB_MAX_RANK];
    int64_t n0 = strides_in_order(5, shape, ord, 1, s0);
    int64_t n1 = strides_in_order(5, shape, nat, 1, s1);
    memcpy(bc, s1, sizeof bc);
    bc[1] = bc[2] = 0;
    int good = 0, cases = 0;
    for (int scalar = 0; scalar <= 1; scalar++) {
        eb_perm p;
        eb_perm_plan_dt(&p, cur_dt, 5, shape, s1, s0, s1);
        cases += 4;
        good += p.mode == EB_PERM_ROW && p.nrep >= 2;
        good += run_case(5, shape, nat, s0, NULL, n0, 0, team, scalar);
        good += run_case(5, shape, nat, s0, s1, n0, n1, team, scalar);
        good += run_case(5, shape, nat, s0, bc, n0, n1, team, scalar);
    }
    EB_CHECK(good == cases, "%s repeated rows (%d threads): %d of %d right",
             eb_dtype_name(cur_dt), eb_team_size(team), good, cases);
}

/* A TILE4 tile of two short whole dims (8 x 9) repeats over the
 * transposed source's next contiguous dim (17: that source read in runs
 * of 1224 elements); one source, a multiply by out's order, scalar. */
static void test_tile4_reps(eb_team *team)
{
    static const int64_t shape[7] = {5, 3, 17, 4, 3, 8, 9};
    int nat[7] = {0, 1, 2, 3, 4, 5, 6}, ord[7] = {0, 3, 1, 4, 6, 2, 5};
    int64_t s0[EB_MAX_RANK], s1[EB_MAX_RANK];
    int64_t n0 = strides_in_order(7, shape, ord, 1, s0);
    int64_t n1 = strides_in_order(7, shape, nat, 1, s1);
    int good = 0, cases = 0;
    for (int scalar = 0; scalar <= 1; scalar++) {
        eb_perm p;
        eb_perm_plan_dt(&p, cur_dt, 7, shape, s1, s0, NULL);
        cases += 3;
        /* (complex128's 1224-element tile would pass REP_BYTES: none) */
        good += cur_dt != EB_F64 || (p.mode == EB_PERM_TILE4 && p.nrep == 1);
        good += run_case(7, shape, nat, s0, NULL, n0, 0, team, scalar);
        good += run_case(7, shape, nat, s0, s1, n0, n1, team, scalar);
    }
    EB_CHECK(good == cases, "%s repeated 4 x 4 tiles (%d threads): %d of %d "
             "right", eb_dtype_name(cur_dt), eb_team_size(team), good, cases);
}

/* A GENERIC tile fits the table it runs from (8192 elements past the
 * last-level cache, as this box of 36 MiB is; 2048 in it) even when each
 * array's innermost dims are other short dims: a multiply of rank 10
 * over 3s and 9s whose sources broadcast along alternate dims. */
static void test_generic_table(void)
{
    static const int64_t shape[10] = {3, 3, 3, 3, 9, 27, 3, 3, 9, 3};
    static const int64_t so[10] = {1594323, 531441, 177147, 59049, 6561,
                                   243, 81, 27, 3, 1};
    static const int64_t s0[10] = {19683, 27, 0, 9, 0, 729, 0, 3, 81, 1};
    static const int64_t s1[10] = {59049, 0, 27, 0, 3, 2187, 1, 0, 243, 0};
    eb_perm p;
    eb_perm_plan(&p, 10, shape, so, s0, s1);
    int64_t tile = 1;
    for (int d = 0; d < p.rank; d++)
        tile *= p.block[d];
    EB_CHECK(p.mode == EB_PERM_GENERIC && tile <= 8192,
             "a generic tile of short dims fits its table (mode %d, %lld "
             "elements)", (int)p.mode, (long long)tile);
}

/* GENERIC tiles of a copy follow the source (loop_src 1), of a multiply
 * out's order (0): both right, with one and two threads, scalar too, on
 * a box of 12 dims of 3 scrambled but for the innermost (no RUNS tile;
 * 4.3 MB in float64: the team splits it, and its tiles prefetch the next
 * ones). */
static void test_generic_follow(eb_team *team)
{
    int64_t shape[12];
    for (int d = 0; d < 12; d++)
        shape[d] = 3;
    int nat[12] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11},
        ord[12] = {7, 2, 9, 0, 4, 5, 10, 3, 8, 1, 6, 11};
    int64_t s0[EB_MAX_RANK], s1[EB_MAX_RANK];
    int64_t n0 = strides_in_order(12, shape, ord, 1, s0);
    int64_t n1 = strides_in_order(12, shape, nat, 1, s1);
    eb_perm p1, p2;
    eb_perm_plan_dt(&p1, cur_dt, 12, shape, s1, s0, NULL);
    eb_perm_plan_dt(&p2, cur_dt, 12, shape, s1, s0, s1);
    int good = (p1.mode != EB_PERM_GENERIC || p1.loop_src == 1) &&
               (p2.mode != EB_PERM_GENERIC || p2.loop_src == 0) &&
               (cur_dt != EB_F64 || (p1.mode == EB_PERM_GENERIC &&
                                     p2.mode == EB_PERM_GENERIC));
    int cases = 1;
    for (int scalar = 0; scalar <= 1; scalar++) {
        cases += 2;
        good += run_case(12, shape, nat, s0, NULL, n0, 0, team, scalar);
        good += run_case(12, shape, nat, s0, s1, n0, n1, team, scalar);
    }
    EB_CHECK(good == cases, "%s generic tiles in the source's order (%d "
             "threads): %d of %d right", eb_dtype_name(cur_dt),
             eb_team_size(team), good, cases);
}

/* A copy whose source runs on with out for 9 elements at a time, the
 * dims around them short and scrambled (gm_queen's per-block output
 * permutation): the plan is GENERIC, and its tiles read the source in
 * vectors where 4 table entries run on (the vector table), from
 * single loads where a vector would cross a run's end. Small and large
 * (the large one splits over the team and prefetches the next tiles);
 * vector and scalar kernels. */
static void test_generic_short_runs(eb_team *team)
{
    int nat[7] = {0, 1, 2, 3, 4, 5, 6}, ord[7] = {0, 3, 5, 1, 4, 2, 6};
    int good = 0, cases = 0;
    for (int big = 0; big <= 1; big++) {
        int64_t shape[7] = {big ? 405 : 9, 2, 3, 3, 3, 3, 9};
        int64_t s0[EB_MAX_RANK], so[EB_MAX_RANK];
        int64_t n0 = strides_in_order(7, shape, ord, 1, s0);
        strides_in_order(7, shape, nat, 1, so);
        eb_perm p;
        eb_perm_plan_dt(&p, cur_dt, 7, shape, so, s0, NULL);
        cases++;
        good += cur_dt != EB_F64 || p.mode == EB_PERM_GENERIC;
        for (int scalar = 0; scalar <= 1; scalar++) {
            cases++;
            good += run_case(7, shape, nat, s0, NULL, n0, 0, team, scalar);
        }
        /* The source's runs of 9 then 7: a vector of 4 from entry 8 of
         * out's runs of 9 crosses the source's run. */
        int64_t odd[7] = {big ? 405 : 9, 2, 3, 3, 3, 3, 7};
        n0 = strides_in_order(7, odd, ord, 1, s0);
        cases++;
        good += run_case(7, odd, nat, s0, NULL, n0, 0, team, 0);
    }
    EB_CHECK(good == cases, "%s generic copies of short runs (%d threads): "
             "%d of %d right", eb_dtype_name(cur_dt), eb_team_size(team),
             good, cases);
}

/* GENERIC tiles cut by a dim's end (a dim of 9 in blocks of 4) run from
 * a table of their own: copies and multiplies (by a source reversed but
 * for the innermost dim: no RUNS tile), vector and scalar kernels, one
 * and two threads, bit for bit. */
static void test_generic_edges(eb_team *team)
{
    int64_t shape[7] = {3, 3, 3, 3, 9, 3, 3};
    int nat[7] = {0, 1, 2, 3, 4, 5, 6}, ord[7] = {5, 4, 3, 2, 1, 0, 6};
    int64_t s0[EB_MAX_RANK], s1[EB_MAX_RANK];
    int64_t n0 = strides_in_order(7, shape, nat, 1, s0);
    int64_t n1 = strides_in_order(7, shape, ord, 1, s1);
    int good = 0, cases = 0;
    for (int nsrc = 1; nsrc <= 2; nsrc++) {
        eb_perm p;
        eb_perm_plan_dt(&p, cur_dt, 7, shape, s0, s1, nsrc == 2 ? s0 : NULL);
        int cut = 0;
        for (int d = 0; d < p.rank; d++)
            cut = cut || p.shape[d] % p.block[d] != 0;
        cases++;
        good += cur_dt != EB_F64 || (p.mode == EB_PERM_GENERIC && cut);
        for (int scalar = 0; scalar <= 1; scalar++) {
            cases++;
            good += run_case(7, shape, nat, s1, nsrc == 2 ? s0 : NULL, n1,
                             n0, team, scalar);
        }
    }
    EB_CHECK(good == cases, "%s generic tiles cut by a dim's end (%d "
             "threads): %d of %d right", eb_dtype_name(cur_dt),
             eb_team_size(team), good, cases);
}

/* Bytes of a plan's tile along out's innermost dims (the run each tile
 * writes contiguously). */
static int64_t out_run_bytes(const eb_perm *p)
{
    int64_t run = 1;
    for (int d = p->rank - 1; d >= 0 && p->stride[0][d] == run; d--)
        run *= p->block[d];
    return run * p->es;
}

/* A GENERIC copy far larger than the last-level cache writes runs of at
 * least 512 bytes along out: out's innermost 3 x 729 (x0's innermost 3
 * too, then its other dims scrambled: no RUNS tile), so runs of 256
 * bytes would be tiles of 3 x 11. The same layouts on a box that fits
 * the cache (27 instead of 729) keep runs of 256 bytes or less. Then
 * gm_queen's eager operand in small (4.8 M elements, 36 MiB a float64
 * array: x0's innermost 27 elements go to out's outer dims, out's
 * innermost 3 x 729 come from x0 strides 27 and 729) as RUNS tiles that
 * follow x0. Each bit for bit, one and two threads. */
static void test_generic_big(eb_team *team)
{
    for (int c = 0; c < 3; c++) {
        int big = c != 1;
        int64_t w = big ? 729 : 27;
        int64_t shape[8] = {3, 3, 9, 3, 3, 3, w, 3};
        int64_t s0[8] = {1, 81, 3, 243, 243 * w, 729 * w, 243, 27};
        int nat[8] = {0, 1, 2, 3, 4, 5, 6, 7},
            ord[8] = {5, 4, 3, 1, 6, 2, 0, 7};
        if (c < 2)
            strides_in_order(8, shape, ord, 1, s0);
        int64_t so[8];
        int64_t n = strides_in_order(8, shape, nat, 1, so);
        eb_perm p;
        eb_perm_plan_dt(&p, EB_F64, 8, shape, so, s0, NULL);
        if (c == 0)
            EB_CHECK(p.mode == EB_PERM_GENERIC && p.stream == 0 &&
                         out_run_bytes(&p) >= 512,
                     "a big GENERIC copy writes runs of 512 bytes or more "
                     "along out, through the cache (runs under 2 KiB; mode "
                     "%d stream %d run %lld bytes)", p.mode, p.stream,
                     (long long)out_run_bytes(&p));
        else if (c == 1)
            EB_CHECK(p.mode == EB_PERM_GENERIC && out_run_bytes(&p) < 512,
                     "a GENERIC copy that fits the cache writes runs of "
                     "256 bytes (mode %d run %lld bytes)", p.mode,
                     (long long)out_run_bytes(&p));
        else
            EB_CHECK(p.mode == EB_PERM_RUNS && p.loop_src == 1 &&
                         p.norun == 2 && p.nrun == 2,
                     "a big copy of short dims runs in RUNS tiles of x0's "
                     "27 x out's 3 x 22, in x0's order (mode %d loop_src "
                     "%d runs %d and %d dims)", p.mode, p.loop_src, p.nrun,
                     p.norun);
        eb_dtype saved = cur_dt;
        cur_dt = EB_F64;
        EB_CHECK(run_case(8, shape, nat, s0, NULL, n, 0, team, 0),
                 "a GENERIC copy of %lld elements (%d threads) is right",
                 (long long)n, eb_team_size(team));
        cur_dt = saved;
    }
}

/* ROW rows of 81 doubles (648 bytes, 3 of every 4 starting off a 32-byte
 * boundary) that follow each other in out along the next loop dim, with a
 * dim of 3 repeated in the tile (three such streams), 26 MB of out: the
 * rows are streamed, their unaligned ends with non-temporal scalar stores
 * (gm_queen's eager permuting multiplies: 22.6 -> 12.3 ms on a step of 43
 * M elements); the same rows with gaps between them in out do not
 * stream. Bit for bit, one and two threads. */
static void test_row_stream_short(eb_team *team)
{
    int64_t shape[4] = {4, 3, 3300, 81};
    int nat[4] = {0, 1, 2, 3}, ord[4] = {0, 2, 1, 3};
    int64_t so[4], s0[4], s1[4] = {3, 1, 0, 0};
    int64_t n = strides_in_order(4, shape, nat, 1, so);
    int64_t n0 = strides_in_order(4, shape, ord, 1, s0);
    eb_perm p;
    eb_perm_plan(&p, 4, shape, so, s0, s1);
    EB_CHECK(p.mode == EB_PERM_ROW && p.stream == 1 &&
                 p.shape[p.rank - 1] == 81,
             "rows of 81 that follow each other in out stream (mode %d "
             "stream %d row %lld)", p.mode, p.stream,
             (long long)p.shape[p.rank - 1]);
    int64_t gaps[4] = {3 * 3300 * 96, 3300 * 96, 96, 1};
    eb_perm_plan(&p, 4, shape, gaps, s0, s1);
    EB_CHECK(p.mode == EB_PERM_ROW && p.stream == 0,
             "the same rows with gaps in out do not (mode %d stream %d)",
             p.mode, p.stream);
    eb_dtype saved = cur_dt;
    cur_dt = EB_F64;
    EB_CHECK(run_case(4, shape, nat, s0, s1, n0, 12, team, 0) &&
                 run_case(4, shape, nat, s0, NULL, n0, 0, team, 0),
             "streamed rows of 81 over %lld elements (%d threads) are right",
             (long long)n, eb_team_size(team));
    cur_dt = saved;
}

/* RUNS tiles far larger than the last-level cache write out's rows in
 * runs of at least 512 bytes (whole lines but for the ends; 256 bytes,
 * 27 doubles of 3 x 3 x 3, left each line's rest to the next tile along):
 * 14 dims of 3 (38 MiB an array), the source's dims in reverse, as a copy
 * and as a multiply of out's order by it; the same layouts in 12 dims (4
 * MiB) keep runs under 512 bytes. Bit for bit, one and two threads. */
static void test_runs_big(eb_team *team)
{
    for (int c = 0; c < 3; c++) {
        int r = c == 2 ? 12 : 14, nat[14], rev[14];
        int64_t shape[14], so[EB_MAX_RANK], s1[EB_MAX_RANK];
        for (int d = 0; d < r; d++) {
            shape[d] = 3;
            nat[d] = d;
            rev[d] = r - 1 - d;
        }
        int64_t n = strides_in_order(r, shape, nat, 1, so);
        strides_in_order(r, shape, rev, 1, s1);
        int mul = c == 1;
        eb_perm p;
        eb_perm_plan_dt(&p, EB_F64, r, shape, so, mul ? so : s1,
                        mul ? s1 : NULL);
        if (c < 2)
            EB_CHECK(p.mode == EB_PERM_RUNS && p.tsrc == 1 + mul &&
                         out_run_bytes(&p) >= 512,
                     "a big RUNS %s writes out in runs of 512 bytes or "
                     "more (mode %d tsrc %d run %lld bytes)",
                     mul ? "multiply" : "copy", p.mode, p.tsrc,
                     (long long)out_run_bytes(&p));
        else
            EB_CHECK(p.mode == EB_PERM_RUNS && out_run_bytes(&p) < 512,
                     "a RUNS copy that fits the cache writes out in runs "
                     "under 512 bytes (mode %d run %lld bytes)", p.mode,
                     (long long)out_run_bytes(&p));
        if (c == 2 || (!mul && team))
            continue;
        eb_dtype saved = cur_dt;
        cur_dt = EB_F64;
        EB_CHECK(run_case(r, shape, nat, mul ? so : s1, mul ? s1 : NULL, n,
                          mul ? n : 0, team, 0),
                 "a big RUNS %s of %lld elements (%d threads) is right",
                 mul ? "multiply" : "copy", (long long)n,
                 eb_team_size(team));
        cur_dt = saved;
    }
}

/* A float64 copy (mul 0) or multiply (mul 1) over dims of 3 labelled by
 * out_order (out compact in that order, box dims in it, nat[] that
 * order) from a source compact in src_order (the same labels; the
 * multiply's x1, its x0 laid out as out): fills shape, nat, out's strides
 * so and the source's ss, plans it into p; returns the elements. */
static int64_t labelled(const char *out_order, const char *src_order,
                        int mul, int64_t *shape, int *nat, int64_t *so,
                        int64_t *ss, eb_perm *p)
{
    int r = (int)strlen(out_order), src[EB_MAX_RANK];
    for (int d = 0; d < r; d++) {
        shape[d] = 3;
        nat[d] = d;
        /* the source's dims, outermost first, as dims of out's box */
        src[d] = (int)(strchr(out_order, src_order[d]) - out_order);
    }
    int64_t n = strides_in_order(r, shape, nat, 1, so);
    strides_in_order(r, shape, src, 1, ss);
    if (mul)
        eb_perm_plan_dt(p, EB_F64, r, shape, so, so, ss);
    else
        eb_perm_plan_dt(p, EB_F64, r, shape, so, ss, NULL);
    return n;
}

/* A big RUNS copy whose source runs (its innermost 3 x 3 x 3) and out's
 * runs share a dim (gm_queen's eager operand, 14 of its 17 dims of 3:
 * 38 MiB an array) writes out's rows in runs of 2 KiB or more (512
 * bytes, rows of 3 x 22, ran 1.4-1.5 times as long on the operand of
 * 129 M elements); bit for bit, one and two threads. */
static void test_runs_big_shared(eb_team *team)
{
    enum { R = 14 };
    int nat[R];
    int64_t shape[R], so[EB_MAX_RANK], s0[EB_MAX_RANK];
    eb_perm p;
    int64_t n = labelled("wslquhigdyneob", "higdyneoqsbluw", 0, shape, nat, so,
                         s0, &p);
    EB_CHECK(p.mode == EB_PERM_RUNS && out_run_bytes(&p) >= 2048,
             "a big RUNS copy with a dim in both runs writes out in runs "
             "of 2 KiB or more (mode %d run %lld bytes)", p.mode,
             (long long)out_run_bytes(&p));
    eb_dtype saved = cur_dt;
    cur_dt = EB_F64;
    EB_CHECK(run_case(R, shape, nat, s0, NULL, n, 0, team, 0),
             "a big RUNS copy with a dim in both runs, %lld elements (%d "
             "threads), is right", (long long)n, eb_team_size(team));
    cur_dt = saved;
}

/* A big RUNS multiply by a transpose whose source runs (its innermost 3
 * x 3 x 3) hold one of out's innermost dims (gm_queen's eager multiply,
 * 14 of its 16 dims of 3: 36 MiB an array): t's run shrinks to a line
 * (3 x 3) so that out's run grows to 4 KiB or more (1944 bytes with
 * t's run of 27); bit for bit, one and two threads. */
static void test_runs_big_short_t(eb_team *team)
{
    enum { R = 14 };
    int nat[R];
    int64_t shape[R], so[EB_MAX_RANK], s1[EB_MAX_RANK];
    eb_perm p;
    int64_t n = labelled("fyinexhrovpqsb", "ixnopqrybesvhf", 1, shape, nat, so,
                         s1, &p);
    int64_t trun = 1;
    for (int k = 0; p.mode == EB_PERM_RUNS && k < p.nrun; k++)
        trun *= p.block[p.run[k]];
    EB_CHECK(p.mode == EB_PERM_RUNS && p.tsrc == 2 && trun * 8 <= 72 &&
                 out_run_bytes(&p) >= 4096,
             "a big RUNS multiply by a transpose reads the transposed "
             "source in runs of a line and writes out in runs of 4 KiB or "
             "more (mode %d t %d t's run %lld bytes, out's %lld)", p.mode,
             p.tsrc, (long long)trun * 8, (long long)out_run_bytes(&p));
    eb_dtype saved = cur_dt;
    cur_dt = EB_F64;
    EB_CHECK(run_case(R, shape, nat, so, s1, n, n, team, 0),
             "a big RUNS multiply by a transpose, %lld elements (%d "
             "threads), is right", (long long)n, eb_team_size(team));
    cur_dt = saved;
}

/* A big GENERIC multiply whose short innermost dim (3) all three arrays
 * share, the other source's next dims scrambled (gm_queen's eager
 * multiply, 14 of its 15 dims of 3: 36 MiB an array): its tiles grow past
 * the 2048 elements a box in the cache stops at (2187 here, 729 before);
 * bit for bit, one and two threads. */
static void test_generic_big_tile(eb_team *team)
{
    enum { R = 14 };
    int nat[R];
    int64_t shape[R], so[EB_MAX_RANK], s1[EB_MAX_RANK];
    eb_perm p;
    int64_t n = labelled("qfgheinoxdryvs", "vrxgidneyhqofs", 1, shape, nat, so,
                         s1, &p);
    int64_t tile = 1;
    for (int d = 0; d < p.rank; d++)
        tile *= p.block[d];
    EB_CHECK(p.mode == EB_PERM_GENERIC && tile > 2048,
             "a big GENERIC multiply grows its tiles past 2048 elements "
             "(mode %d tile %lld)", p.mode, (long long)tile);
    eb_dtype saved = cur_dt;
    cur_dt = EB_F64;
    EB_CHECK(run_case(R, shape, nat, so, s1, n, n, team, 0),
             "a big GENERIC multiply, %lld elements (%d threads), is right",
             (long long)n, eb_team_size(team));
    cur_dt = saved;
}

/* RUNS tiles of a box past GENERIC_PF_MIN_BYTES prefetch the next tile
 * as they move this one; out's short rows (72 bytes here: out's run of
 * 3 x 3, the source's run its next dims) from a list of the tile's lines
 * in out, rows that make longer runs merged: a copy of 13 dims of 3 (12.7
 * MiB an array) in gm_queen's kind of order, one and two threads, bit
 * for bit. */
static void test_runs_short_rows(eb_team *team)
{
    enum { R = 13 };
    int nat[R];
    int64_t shape[R], so[EB_MAX_RANK], s0[EB_MAX_RANK];
    eb_perm p;
    int64_t n = labelled("nodqrgybesvhf", "bqfghenodryvs", 0, shape, nat, so,
                         s0, &p);
    int64_t row = 1;
    for (int k = 0; p.mode == EB_PERM_RUNS && k < p.norun; k++)
        row *= p.block[p.orun[k]];
    EB_CHECK(p.mode == EB_PERM_RUNS && row * 8 == 72 &&
                 out_run_bytes(&p) > 72,
             "a copy of 13 dims of 3 runs in RUNS tiles with out's rows of "
             "72 bytes that make longer runs in out (mode %d rows %lld "
             "bytes, runs %lld)", p.mode, (long long)row * 8,
             (long long)out_run_bytes(&p));
    eb_dtype saved = cur_dt;
    cur_dt = EB_F64;
    EB_CHECK(run_case(R, shape, nat, s0, NULL, n, 0, team, 0),
             "a RUNS copy of %lld elements with out's short rows "
             "prefetched (%d threads) is right",
             (long long)n, eb_team_size(team));
    cur_dt = saved;
}

/* XROW rows: out's innermost dim R (2 to 15) along which a source e is
 * constant and contiguous along the next dim n, the other source laid
 * out as out (an outer product's operands), or e alone (a broadcast
 * copy); e as x0 and as x1, n with 0 to 3 left over from groups of 4,
 * an outer dim (the tile repeated over it where it stays within 16
 * KiB), streamed (forced) and not, vector and scalar kernels. float64
 * multiplies and 8-byte copies plan XROW; every result bit for bit. */
static void test_xrow(eb_team *team)
{
    static const int64_t Rs[] = {2, 3, 4, 5, 7, 8, 9, 15};
    static const int64_t ns[] = {4, 13, 30, 403};
    int good = 0, cases = 0;
    size_t es = eb_dtype_size(cur_dt);
    for (size_t ri = 0; ri < sizeof Rs / sizeof Rs[0]; ri++)
        for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++)
            for (int form = 0; form < 3; form++) {
                /* form 0: e = x0 times x1; 1: x0 times e = x1; 2: copy */
                int64_t R = Rs[ri], n = ns[ni];
                int64_t shape[3] = {3, n, R}, so[3] = {n * R, R, 1},
                        se[3] = {n, 1, 0}, sc[3] = {0, R, 1};
                int nat[3] = {0, 1, 2};
                const int64_t *s0 = form == 1 ? sc : se,
                              *s1 = form == 2 ? NULL : form == 1 ? se : sc;
                int64_t n0 = form == 1 ? n * R : 3 * n, n1 = form ? 3 * n
                                                                : n * R;
                if (form == 2)
                    n1 = 0;
                eb_perm p;
                eb_perm_plan_dt(&p, cur_dt, 3, shape, so, s0, s1);
                int want = es == 8 && (form == 2 || cur_dt == EB_F64) &&
                           R < (int64_t)(128 / es);
                cases++;
                /* whole rows of n R repeat over the outer dim of 3 when
                 * the tile stays within 16 KiB (a copy's dims merge: no
                 * outer dim) */
                int reps = form != 2 && 3 * n * R * (int64_t)es <= 16384;
                good += (p.mode == EB_PERM_XROW) == want &&
                        (!want || (p.tsrc == (form == 1 ? 2 : 1) &&
                                   p.nrep == reps));
                for (int scalar = 0; scalar <= 3; scalar++) {
                    cases++;
                    good += run_case(3, shape, nat, s0, s1, n0, n1, team,
                                     scalar);
                }
            }
    EB_CHECK(good == cases, "%s XROW rows (%d threads): %d of %d right",
             eb_dtype_name(cur_dt), eb_team_size(team), good, cases);
}

/* PROW rows: out's innermost dim P (2 to 8) along which a source y is
 * contiguous and which is constant along the next dim n, the other
 * source c laid out as out (an outer product whose operands share their
 * innermost label); y as x0 and as x1, c running on along the outer dim
 * (the kernel's groups of rows, y at its own stride there) or constant
 * along it (the tile repeated over it), rows of n P elements with 0 to 3
 * left over from vectors, rows longer than a block (32 KiB), vector and
 * scalar kernels, one and two threads. float64 multiplies with P <= 7, n P >= 8 and at least 64
 * elements a tile plan PROW; every result bit for bit. */
static void test_prow(eb_team *team)
{
    static const int64_t Ps[] = {2, 3, 4, 5, 7, 8};
    static const int64_t ns[] = {1, 3, 4, 13, 403, 1001};
    static const int64_t outer[] = {3, 29};
    int good = 0, cases = 0;
    for (size_t pi = 0; pi < sizeof Ps / sizeof Ps[0]; pi++)
        for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++)
            for (int form = 0; form < 6; form++) {
                /* form % 3 == 0: y = x0 times c = x1; 1: c = x0 times
                 * y = x1; 2: y times c constant along the outer dim */
                int64_t P = Ps[pi], n = ns[ni], o = outer[form / 3];
                int f = form % 3;
                int64_t shape[3] = {o, n, P}, so[3] = {n * P, P, 1},
                        sy[3] = {P, 0, 1}, sc[3] = {f == 2 ? 0 : n * P, P, 1};
                int nat[3] = {0, 1, 2};
                const int64_t *s0 = f == 1 ? sc : sy, *s1 = f == 1 ? sy : sc;
                int64_t ny = o * P, nc = (f == 2 ? 1 : o) * n * P;
                eb_perm p;
                eb_perm_plan_dt(&p, cur_dt, 3, shape, so, s0, s1);
                /* With n = 1 and c constant along the outer dim, the
                 * dims merge into rows of o P where c is the repeated
                 * source and y the one laid out as out. */
                int swap = n == 1 && f == 2;
                int want = cur_dt == EB_F64 && P <= 7 &&
                           (swap ? o : n) * P >= 8 && o * n * P >= 64;
                cases++;
                good += (p.mode == EB_PERM_PROW) == want &&
                        (!want || p.tsrc == (f == 1 || swap ? 2 : 1));
                for (int scalar = 0; scalar <= 1; scalar++) {
                    cases++;
                    good += run_case(3, shape, nat, s0, s1, f == 1 ? nc : ny,
                                     f == 1 ? ny : nc, team, scalar);
                }
            }
    EB_CHECK(good == cases, "%s PROW rows (%d threads): %d of %d right",
             eb_dtype_name(cur_dt), eb_team_size(team), good, cases);
}

/* Edge shapes: rank 0 (one element), size-1 dims anywhere, a zero-size
 * dim (nothing written, nothing read). */
static void test_edges(eb_dtype dt)
{
    size_t es = eb_dtype_size(dt);
    char a[16], b[16], o[16], want[16];
    fill(dt, a, 1);
    fill(dt, b, 1);
    eb_perm p;
    eb_perm_plan_dt(&p, dt, 0, NULL, NULL, NULL, NULL);
    eb_perm_exec(&p, a, NULL, o, NULL);
    EB_CHECK(memcmp(o, a, es) == 0, "%s: rank 0 copy", eb_dtype_name(dt));
    int64_t none[1] = {0};
    eb_perm_plan_dt(&p, dt, 0, none, none, none, none);
    eb_perm_exec(&p, a, b, o, NULL);
    elem(dt, want, a, b);
    EB_CHECK(memcmp(o, want, es) == 0, "%s: rank 0 multiply",
             eb_dtype_name(dt));
    int64_t s1[4] = {1, 37, 1, 21}, st[4];
    int o1[4] = {3, 1, 0, 2}, in_ord[4] = {2, 3, 0, 1};
    int64_t n = strides_in_order(4, s1, in_ord, 1, st);
    cur_dt = dt;
    EB_CHECK(run_case(4, s1, o1, st, NULL, n, 0, NULL, 0) &&
                 run_case(4, s1, o1, st, st, n, n, NULL, 0),
             "%s: size-1 dims", eb_dtype_name(dt));
    int64_t z[3] = {5, 0, 7}, zs[3] = {1, 5, 0}, zo[3] = {7, 7, 1};
    memset(o, 0x55, sizeof o);
    eb_perm_plan_dt(&p, dt, 3, z, zo, zs, zs);
    eb_perm_exec(&p, NULL, NULL, o, NULL);
    int untouched = 1;
    for (size_t i = 0; i < sizeof o; i++)
        untouched = untouched && o[i] == 0x55;
    EB_CHECK(p.elems == 0 && untouched, "%s: a zero-size dim writes "
             "nothing (elems %lld)", eb_dtype_name(dt), (long long)p.elems);
}

/* eb_kern_xform with reduced dims against a naive sum in double (for
 * float32 the kernel sums in double and rounds once; complex parts sum
 * apart): out over dims (a, b) of in[b][c][a][d] summed over c and d, for
 * each dtype, with out dims and reduced dims of size 1 too. */
static void test_reduce(eb_dtype dt)
{
    static const int64_t cases[4][4] = {
        {7, 5, 9, 3}, {1, 33, 4, 1}, {65, 1, 1, 700}, {3, 2, 5, 1}};
    int good = 0;
    size_t es = eb_dtype_size(dt);
    int nc = eb_dtype_is_complex(dt) ? 2 : 1;
    int f32 = eb_dtype_real(dt) == EB_F32;
    for (int k = 0; k < 4; k++) {
        int64_t A = cases[k][0], B = cases[k][1], C = cases[k][2],
                D = cases[k][3];
        int64_t nin = A * B * C * D, nout = A * B;
        char *in = malloc((size_t)nin * es);
        char *out = malloc((size_t)nout * es);
        fill(dt, in, nin);
        eb_xform x = {0};
        x.dt = dt;
        x.rank = 2;
        x.shape[0] = A;
        x.shape[1] = B;
        x.in_stride[0] = D;           /* a */
        x.in_stride[1] = C * A * D;   /* b */
        x.red_rank = 2;
        x.red_shape[0] = C;
        x.red_stride[0] = A * D;
        x.red_shape[1] = D;
        x.red_stride[1] = 1;
        eb_xform_simplify(&x);
        eb_kern_xform(&x, in, out, NULL);
        int ok = 1;
        for (int64_t a = 0; a < A; a++)
            for (int64_t b = 0; b < B; b++)
                for (int c = 0; c < nc; c++) {
                    double sum = 0;
                    for (int64_t i = 0; i < C; i++)
                        for (int64_t j = 0; j < D; j++) {
                            int64_t q = ((b * C + i) * A + a) * D + j;
                            sum += f32 ? ((float *)in)[q * nc + c]
                                       : ((double *)in)[q * nc + c];
                        }
                    int64_t o = (a * B + b) * nc + c;
                    double got = f32 ? ((float *)out)[o]
                                     : ((double *)out)[o];
                    if (f32 ? got != (double)(float)sum : got != sum)
                        ok = 0;
                }
        good += ok;
        free(in);
        free(out);
    }
    EB_CHECK(good == 4, "%s reductions: %d of 4 right", eb_dtype_name(dt),
             good);
}

int main(void)
{
    eb_error err = {0};
    eb_team *two = NULL;
    EB_CHECK(eb_team_create(2, &two, &err) == EB_OK, "team: %s", err.msg);
    test_modes();
    test_generic_table();
    test_generic_big(NULL);
    test_generic_big(two);
    test_row_stream_short(NULL);
    test_row_stream_short(two);
    test_runs_big(NULL);
    test_runs_big(two);
    test_runs_big_shared(NULL);
    test_runs_big_shared(two);
    test_runs_big_short_t(NULL);
    test_runs_big_short_t(two);
    test_generic_big_tile(NULL);
    test_generic_big_tile(two);
    test_runs_short_rows(NULL);
    test_runs_short_rows(two);
    for (int t = 0; t < EB_DTYPE_COUNT; t++) {
        cur_dt = (eb_dtype)t;
        for (int r = 1; r <= 8; r++) {
            test_one_source(r, NULL, 0);
            if (r <= 6)
                test_one_source(r, NULL, 1);
            test_two_sources(r, r <= 5 ? 40 : 10, NULL, 0);
            test_two_sources(r, 10, NULL, 1);
            test_two_sources(r, 10, two, 0);
        }
        test_one_source(4, two, 0);
        /* GENERIC copies with non-temporal stores (forced: the rule
         * takes outputs past the last-level cache), vector and scalar
         * kernels, one and two threads. */
        for (int r = 3; r <= 6; r++) {
            test_one_source(r, NULL, 2);
            test_one_source(r, NULL, 3);
        }
        test_one_source(5, two, 2);
        test_large(NULL);
        test_large(two);
        test_reduce(cur_dt);
        test_modes_dt(cur_dt);
        test_edges(cur_dt);
        test_tile_mul(NULL);
        test_tile_mul(two);
        test_runs(NULL);
        test_runs(two);
        test_runs_two(NULL);
        test_runs_two(two);
        test_row_reps(NULL);
        test_row_reps(two);
        test_tile4_reps(NULL);
        test_tile4_reps(two);
        test_generic_follow(NULL);
        test_generic_follow(two);
        test_generic_short_runs(NULL);
        test_generic_short_runs(two);
        test_generic_edges(NULL);
        test_generic_edges(two);
        test_xrow(NULL);
        test_xrow(two);
        test_prow(NULL);
        test_prow(two);
    }
    eb_team_destroy(two);
    return eb_check_done("test_permute");
}
