/* permute: the permutation engine (see permute.h). The functions that move
 * data are named eb_kern_perm_* so that profiles group them with the other
 * kernels (scripts/callgrind-window's `engine` category). */
#include "permute.h"

#include <immintrin.h>
#include <string.h>

#include "team.h"

/* Elements each array should have inside a GENERIC tile along its own
 * innermost dims: 32 doubles are four cache lines, so a tile's runs are
 * whole lines even when they do not start on a line boundary, and each
 * page a tile touches gives it 256 bytes. (16 and 64 measured the same
 * within this machine's noise on random permutations of 24 dims of 2.) */
#ifndef GENERIC_RUN
#define GENERIC_RUN 32
#endif

/* Side of a TILE4 tile: 16 x 16 doubles, 2 KiB per array, in L1 together
 * with the other arrays' tiles; 16 sub-tiles of 4 x 4. */
#ifndef TILE_SIDE
#define TILE_SIDE 16
#endif

/* TILE4 needs both tile dims this long: shorter ones leave more scalar
 * edge than 4 x 4 blocks, and the GENERIC tile's offset table does better
 * (test_permute's rank-4 to rank-8 boxes of 5s and 3s: 2-3x fewer
 * instructions). */
enum { TILE4_MIN = 8 };

/* GENERIC tiles of at most this many elements run from a table of
 * offsets built once per execution (24 KiB on the stack): one flat loop
 * instead of nested loops of two, three or five iterations. */
#ifndef TABLE_MAX
#define TABLE_MAX 2048
#endif

/* Long rows are cut into pieces of this many elements (32 KiB of out):
 * nothing is lost per piece, and the team can split a single row (an
 * elementwise multiply of two compact arrays is one row). */
enum { ROW_BLOCK = 4096 };

/* ROW outputs of more than STREAM_MIN_BYTES (the last-level cache is 32
 * MiB on this machine class, shared with the inputs) in rows of at least
 * STREAM_MIN_ROW elements are written with non-temporal stores. Short rows
 * are not: on rows of 27 (gm_queen) streaming was 4x slower, the partial
 * lines at each row's ends defeating the write combining. */
#ifndef STREAM_MIN_ROW
#define STREAM_MIN_ROW 512
#endif
#define STREAM_MIN_BYTES (24.0 * 1024 * 1024)

/* Below this many elements a job stays on one thread (waking the team costs
 * microseconds). */
enum { PERM_PARALLEL_MIN = 1 << 16 };

static int64_t iabs64(int64_t v)
{
    return v < 0 ? -v : v;
}

/* The dim with the smallest nonzero stride of array s (the innermost of
 * the later dims on ties), -1 if the array is constant. */
static int unit_dim(const eb_perm *p, int s)
{
    int best = -1;
    for (int d = 0; d < p->rank; d++) {
        int64_t st = iabs64(p->stride[s][d]);
        if (st && (best < 0 || st <= iabs64(p->stride[s][best])))
            best = d;
    }
    return best;
}

/* Drop size-1 dims, order the rest by out's stride (largest first) and
 * merge neighbours that are contiguous in every array. */
static void simplify(eb_perm *p, int rank, const int64_t *shape,
                     const int64_t *const *st)
{
    int idx[EB_MAX_RANK], n = 0;
    for (int d = 0; d < rank; d++)
        if (shape[d] != 1)
            idx[n++] = d;
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && st[0][idx[j]] > st[0][idx[j - 1]]; j--) {
            int t = idx[j];
            idx[j] = idx[j - 1];
            idx[j - 1] = t;
        }
    int r = 0;
    for (int k = 0; k < n; k++) {
        int d = idx[k];
        int merge = r > 0;
        for (int s = 0; s < 3 && merge; s++)
            merge = p->stride[s][r - 1] == st[s][d] * shape[d];
        if (merge) {
            p->shape[r - 1] *= shape[d];
            for (int s = 0; s < 3; s++)
                p->stride[s][r - 1] = st[s][d];
            continue;
        }
        p->shape[r] = shape[d];
        for (int s = 0; s < 3; s++)
            p->stride[s][r] = st[s][d];
        r++;
    }
    p->rank = r;
}

static int64_t tile_elems(const eb_perm *p)
{
    int64_t n = 1;
    for (int d = 0; d < p->rank; d++)
        n *= p->block[d];
    return n;
}

/* GENERIC: grow the tile along array s's innermost dims until it holds
 * GENERIC_RUN elements of them. */
static void grow_tile(eb_perm *p, int s)
{
    int used[EB_MAX_RANK] = {0};
    int64_t prod = 1;
    while (prod < GENERIC_RUN) {
        int best = -1;
        for (int d = 0; d < p->rank; d++) {
            int64_t st = iabs64(p->stride[s][d]);
            if (!used[d] && st &&
                (best < 0 || st < iabs64(p->stride[s][best])))
                best = d;
        }
        if (best < 0)
            return;
        used[best] = 1;
        /* A dim at most twice what is missing goes in whole: a partial
         * block of a short dim would cost a second, tiny tile. */
        int64_t want = (GENERIC_RUN + prod - 1) / prod;
        if (p->shape[best] <= 2 * want)
            want = p->shape[best];
        if (tile_elems(p) / p->block[best] * want > TABLE_MAX && prod > 1)
            return; /* the tile would not fit its table */
        if (want > p->block[best])
            p->block[best] = want;
        prod *= want;
    }
}

/* Can the non-transposed source o be loaded in 4 x 4 blocks of (di, do)
 * with whole runs: along do, constant along do, or along di? */
static int tile4_other_ok(const eb_perm *p, int o, int di, int dout)
{
    int64_t so = p->stride[o][dout];
    return so == 0 || so == 1 || p->stride[o][di] == 1;
}

static void choose_mode(eb_perm *p)
{
    int r = p->rank, dout = r - 1;
    for (int d = 0; d < r; d++)
        p->block[d] = 1;
    /* Rows shorter than a GENERIC run would cost a pass of the loop nest
     * for every few elements (callgrind on tensornetwork_permutation_light,
     * eager: rows of 2 and 4 made the engine 2.5x the old kernel's
     * instructions); the GENERIC tile takes several of them at once. */
    int row = p->shape[dout] >= GENERIC_RUN / 2;
    for (int s = 1; s <= p->nsrc; s++)
        row = row && (p->stride[s][dout] == 0 || unit_dim(p, s) == dout);
    if (row) {
        p->mode = EB_PERM_ROW;
        p->block[dout] =
            p->shape[dout] <= 2 * ROW_BLOCK ? p->shape[dout] : ROW_BLOCK;
        return;
    }
    for (int t = 1; t <= p->nsrc; t++) {
        int di = unit_dim(p, t);
        if (di < 0 || di == dout || p->stride[t][di] != 1 ||
            p->stride[t][dout] == 0 || p->stride[0][dout] != 1 ||
            p->shape[di] < TILE4_MIN || p->shape[dout] < TILE4_MIN)
            continue;
        if (p->nsrc == 2 && !tile4_other_ok(p, 3 - t, di, dout))
            continue;
        p->mode = EB_PERM_TILE4;
        p->tsrc = t;
        p->di = di;
        p->block[di] = p->shape[di] < TILE_SIDE ? p->shape[di] : TILE_SIDE;
        p->block[dout] =
            p->shape[dout] < TILE_SIDE ? p->shape[dout] : TILE_SIDE;
        return;
    }
    p->mode = EB_PERM_GENERIC;
    for (int s = 0; s <= p->nsrc; s++)
        grow_tile(p, s);
}

/* The dim the team splits: the outermost one with at least 8 blocks (so
 * that every part writes one contiguous region), else the one with most. */
static int choose_split(const eb_perm *p)
{
    int best = -1;
    int64_t most = 1;
    for (int d = 0; d < p->rank; d++) {
        int64_t nb = (p->shape[d] + p->block[d] - 1) / p->block[d];
        if (nb >= 8)
            return d;
        if (nb > most) {
            most = nb;
            best = d;
        }
    }
    return best;
}

void eb_perm_plan_dt(eb_perm *p, eb_dtype dt, int rank, const int64_t *shape,
                     const int64_t *out_stride, const int64_t *x0_stride,
                     const int64_t *x1_stride)
{
    static const int64_t zeros[EB_MAX_RANK];
    memset(p, 0, sizeof *p);
    p->dt = dt;
    p->nsrc = x1_stride ? 2 : 1;
    const int64_t *st[3] = {out_stride, x0_stride,
                            x1_stride ? x1_stride : zeros};
    simplify(p, rank, shape, st);
    p->elems = 1;
    for (int d = 0; d < p->rank; d++)
        p->elems *= p->shape[d];
    p->split = -1;
    if (p->rank == 0) {
        p->mode = EB_PERM_ROW;
        return;
    }
    choose_mode(p);
    p->split = choose_split(p);
    p->stream = p->mode == EB_PERM_ROW &&
                p->shape[p->rank - 1] >= STREAM_MIN_ROW &&
                (double)p->elems * 8 > STREAM_MIN_BYTES;
}

void eb_perm_plan(eb_perm *p, int rank, const int64_t *shape,
                  const int64_t *out_stride, const int64_t *x0_stride,
                  const int64_t *x1_stride)
{
    eb_perm_plan_dt(p, EB_F64, rank, shape, out_stride, x0_stride, x1_stride);
}

double eb_perm_bytes(const eb_perm *p)
{
    double es = (double)eb_dtype_size(p->dt);
    double bytes = (double)p->elems * es;
    for (int s = 1; s <= p->nsrc; s++) {
        double n = es;
        for (int d = 0; d < p->rank; d++)
            if (p->stride[s][d])
                n *= (double)p->shape[d];
        bytes += n;
    }
    return bytes;
}

/* ---- tiles -------------------------------------------------------------- */

/* One step of an odometer over dims td[0..n-1] (the last fastest) with
 * extents ext[], carrying the offsets off[3] of out, x0 and x1 along;
 * 0 when it wrapped around (the walk is over). */
static int odometer_next(const eb_perm *p, const int *td, int n,
                         const int64_t *ext, int64_t *idx, int64_t *off)
{
    for (int k = n - 1; k >= 0; k--) {
        int d = td[k];
        for (int s = 0; s < 3; s++)
            off[s] += p->stride[s][d];
        if (++idx[k] < ext[d])
            return 1;
        for (int s = 0; s < 3; s++)
            off[s] -= p->stride[s][d] * ext[d];
        idx[k] = 0;
    }
    return 0;
}

/* The tile at offsets off[] with extents ext[] along its dims td[0..nt-1]
 * (outermost first; the last is out's innermost dim), scalar. */
static void eb_kern_perm_scalar(const eb_perm *p, const int *td, int nt,
                                const int64_t *ext, const double *x0,
                                const double *x1, double *out)
{
    int last = td[nt - 1];
    int64_t n = ext[last], so = p->stride[0][last], s0 = p->stride[1][last],
            s1 = p->stride[2][last];
    int64_t idx[EB_MAX_RANK];
    for (int k = 0; k < nt; k++)
        idx[k] = 0;
    int64_t off[3] = {0, 0, 0};
    do {
        double *restrict w = out + off[0];
        const double *a = x0 + off[1];
        if (p->nsrc == 2) {
            const double *b = x1 + off[2];
            for (int64_t j = 0; j < n; j++)
                w[j * so] = a[j * s0] * b[j * s1];
        } else {
            for (int64_t j = 0; j < n; j++)
                w[j * so] = a[j * s0];
        }
    } while (odometer_next(p, td, nt - 1, ext, idx, off));
}

/* Store one vector of out: non-temporal (nt, out aligned) or not. */
#define EB_STORE(ptr, v)                                                    \
    (nt ? _mm256_stream_pd((ptr), (v)) : _mm256_storeu_pd((ptr), (v)))

/* One row of n elements with unit stride in out: x0 along the row with
 * stride s0 in {0, 1}, times x1 with s1 in {0, 1} (two sources). nt: with
 * non-temporal stores, after a scalar head up to a 32-byte boundary (for
 * outputs larger than the last-level cache, whose lines would otherwise be
 * read before they are written). */
__attribute__((target("avx2"), always_inline)) static inline void
row_body(int64_t n, const double *x0, int64_t s0, const double *x1,
         int64_t s1, int nsrc, double *out, const int nt)
{
    if (nsrc == 2 && s0 == 0 && s1 == 1) {
        const double *t = x0;
        x0 = x1;
        x1 = t;
        s0 = 1;
        s1 = 0;
    }
    int64_t j = 0, n16 = n - 16; /* bound of the 4-vector loops: j <= n16
                                  * costs one instruction less a pass than
                                  * j + 16 <= n (callgrind, elementwise) */
    if (nt)
        for (; j < n && ((uintptr_t)(out + j) & 31); j++)
            out[j] = nsrc == 2 ? x0[j * s0] * x1[j * s1] : x0[j * s0];
    if (s0 == 0) {
        double c = nsrc == 2 ? x0[0] * x1[0] : x0[0];
        __m256d v = _mm256_set1_pd(c);
        for (; j + 4 <= n; j += 4)
            EB_STORE(out + j, v);
        for (; j < n; j++)
            out[j] = c;
        return;
    }
    if (nsrc == 1) {
        for (; j <= n16; j += 16) {
            __m256d a0 = _mm256_loadu_pd(x0 + j);
            __m256d a1 = _mm256_loadu_pd(x0 + j + 4);
            __m256d a2 = _mm256_loadu_pd(x0 + j + 8);
            __m256d a3 = _mm256_loadu_pd(x0 + j + 12);
            EB_STORE(out + j, a0);
            EB_STORE(out + j + 4, a1);
            EB_STORE(out + j + 8, a2);
            EB_STORE(out + j + 12, a3);
        }
        for (; j + 4 <= n; j += 4)
            EB_STORE(out + j, _mm256_loadu_pd(x0 + j));
        for (; j < n; j++)
            out[j] = x0[j];
        return;
    }
    if (s1 == 0) {
        double c = x1[0];
        __m256d v = _mm256_set1_pd(c);
        for (; j <= n16; j += 16) {
            __m256d a0 = _mm256_mul_pd(_mm256_loadu_pd(x0 + j), v);
            __m256d a1 = _mm256_mul_pd(_mm256_loadu_pd(x0 + j + 4), v);
            __m256d a2 = _mm256_mul_pd(_mm256_loadu_pd(x0 + j + 8), v);
            __m256d a3 = _mm256_mul_pd(_mm256_loadu_pd(x0 + j + 12), v);
            EB_STORE(out + j, a0);
            EB_STORE(out + j + 4, a1);
            EB_STORE(out + j + 8, a2);
            EB_STORE(out + j + 12, a3);
        }
        for (; j + 4 <= n; j += 4)
            EB_STORE(out + j,
                             _mm256_mul_pd(_mm256_loadu_pd(x0 + j), v));
        for (; j < n; j++)
            out[j] = x0[j] * c;
        return;
    }
    /* Four vectors a pass, as the contiguous multiply has always been
     * (bin_elementwise_mul: 3.9 M instructions a sample against 6.5 M for
     * two vectors a pass). */
    for (; j <= n16; j += 16) {
        __m256d a0 =
            _mm256_mul_pd(_mm256_loadu_pd(x0 + j), _mm256_loadu_pd(x1 + j));
        __m256d a1 = _mm256_mul_pd(_mm256_loadu_pd(x0 + j + 4),
                                   _mm256_loadu_pd(x1 + j + 4));
        __m256d a2 = _mm256_mul_pd(_mm256_loadu_pd(x0 + j + 8),
                                   _mm256_loadu_pd(x1 + j + 8));
        __m256d a3 = _mm256_mul_pd(_mm256_loadu_pd(x0 + j + 12),
                                   _mm256_loadu_pd(x1 + j + 12));
        EB_STORE(out + j, a0);
        EB_STORE(out + j + 4, a1);
        EB_STORE(out + j + 8, a2);
        EB_STORE(out + j + 12, a3);
    }
    for (; j + 4 <= n; j += 4)
        EB_STORE(out + j, _mm256_mul_pd(_mm256_loadu_pd(x0 + j),
                                                _mm256_loadu_pd(x1 + j)));
    for (; j < n; j++)
        out[j] = x0[j] * x1[j];
}

#undef EB_STORE

__attribute__((target("avx2"))) static void
eb_kern_perm_row_avx2(int64_t n, const double *x0, int64_t s0,
                      const double *x1, int64_t s1, int nsrc, double *out)
{
    row_body(n, x0, s0, x1, s1, nsrc, out, 0);
}

__attribute__((target("avx2"))) static void
eb_kern_perm_row_stream_avx2(int64_t n, const double *x0, int64_t s0,
                             const double *x1, int64_t s1, int nsrc,
                             double *out)
{
    row_body(n, x0, s0, x1, s1, nsrc, out, 1);
}

/* Four rows r[k] = p[k * s + 0..3] transposed in registers: afterwards
 * r[k] holds element k of each input row. */
__attribute__((target("avx2"), always_inline)) static inline void
transpose4(__m256d *r)
{
    __m256d t0 = _mm256_unpacklo_pd(r[0], r[1]);
    __m256d t1 = _mm256_unpackhi_pd(r[0], r[1]);
    __m256d t2 = _mm256_unpacklo_pd(r[2], r[3]);
    __m256d t3 = _mm256_unpackhi_pd(r[2], r[3]);
    r[0] = _mm256_permute2f128_pd(t0, t2, 0x20);
    r[1] = _mm256_permute2f128_pd(t1, t3, 0x20);
    r[2] = _mm256_permute2f128_pd(t0, t2, 0x31);
    r[3] = _mm256_permute2f128_pd(t1, t3, 0x31);
}

/* The other source of a TILE4 tile as 4 rows (one per i, 4 values of o):
 * by how it is laid out along (i, o). */
enum { LOAD_DIRECT, LOAD_BCAST, LOAD_TRANS };

__attribute__((target("avx2"), always_inline)) static inline void
load_other(const double *x, int64_t si, int64_t so, int kind, __m256d *m)
{
    if (kind == LOAD_DIRECT) {
        for (int k = 0; k < 4; k++)
            m[k] = _mm256_loadu_pd(x + k * si);
    } else if (kind == LOAD_BCAST) {
        for (int k = 0; k < 4; k++)
            m[k] = _mm256_broadcast_sd(x + k * si);
    } else {
        for (int k = 0; k < 4; k++)
            m[k] = _mm256_loadu_pd(x + k * so);
        transpose4(m);
    }
}

/* A TILE4 tile of ni x no elements: xt (unit stride along i, stride st
 * along o) transposed into out (stride oi along i, unit along o), times
 * xo (strides (xi, xs)) when two sources. Full 4 x 4 blocks in registers,
 * the edges scalar. */
__attribute__((target("avx2"))) static void
eb_kern_perm_tile4_avx2(int64_t ni, int64_t no, const double *xt,
                        int64_t st, const double *xo, int64_t xi, int64_t xs,
                        int nsrc, double *out, int64_t oi)
{
    int kind = xs == 1 ? LOAD_DIRECT : xs == 0 ? LOAD_BCAST : LOAD_TRANS;
    int64_t ni4 = ni / 4 * 4, no4 = no / 4 * 4;
    for (int64_t i = 0; i < ni4; i += 4)
        for (int64_t o = 0; o < no4; o += 4) {
            __m256d r[4];
            for (int k = 0; k < 4; k++)
                r[k] = _mm256_loadu_pd(xt + (o + k) * st + i);
            transpose4(r);
            if (nsrc == 2) {
                __m256d m[4];
                load_other(xo + i * xi + o * xs, xi, xs, kind, m);
                for (int k = 0; k < 4; k++)
                    r[k] = _mm256_mul_pd(r[k], m[k]);
            }
            for (int k = 0; k < 4; k++)
                _mm256_storeu_pd(out + (i + k) * oi + o, r[k]);
        }
    for (int64_t i = 0; i < ni; i++)
        for (int64_t o = i < ni4 ? no4 : 0; o < no; o++) {
            double v = xt[o * st + i];
            out[i * oi + o] = nsrc == 2 ? v * xo[i * xi + o * xs] : v;
        }
}

/* ---- execution ---------------------------------------------------------- */

static void tile(const eb_perm *p, const int *td, int nt, const int64_t *ext,
                 const double *x0, const double *x1, double *out, int avx2)
{
    int last = p->rank - 1;
    if (avx2 && p->mode == EB_PERM_ROW && p->stride[0][last] == 1 &&
        (p->stride[1][last] == 0 || p->stride[1][last] == 1) &&
        (p->stride[2][last] == 0 || p->stride[2][last] == 1)) {
        if (p->stream)
            eb_kern_perm_row_stream_avx2(ext[last], x0, p->stride[1][last],
                                         x1, p->stride[2][last], p->nsrc,
                                         out);
        else
            eb_kern_perm_row_avx2(ext[last], x0, p->stride[1][last], x1,
                                  p->stride[2][last], p->nsrc, out);
        return;
    }
    if (avx2 && p->mode == EB_PERM_TILE4) {
        int t = p->tsrc, o = 3 - t, di = p->di;
        const double *xt = t == 1 ? x0 : x1, *xo = t == 1 ? x1 : x0;
        eb_kern_perm_tile4_avx2(ext[di], ext[last], xt, p->stride[t][last], xo,
                   p->stride[o][di], p->stride[o][last], p->nsrc, out,
                   p->stride[0][di]);
        return;
    }
    eb_kern_perm_scalar(p, td, nt, ext, x0, x1, out);
}

/* Offsets of a full GENERIC tile's elements in out, x0 and x1, in out's
 * order; returns the element count (0: no table, the tile is too large). */
static int build_table(const eb_perm *p, const int *td, int nt, int32_t *t)
{
    int64_t n = tile_elems(p);
    if (n > TABLE_MAX)
        return 0;
    int64_t idx[EB_MAX_RANK], off[3] = {0, 0, 0};
    for (int k = 0; k < nt; k++)
        idx[k] = 0;
    for (int64_t e = 0; e < n; e++) {
        for (int s = 0; s < 3; s++) {
            if (off[s] > INT32_MAX || off[s] < INT32_MIN)
                return 0;
            t[s * TABLE_MAX + e] = (int32_t)off[s];
        }
        odometer_next(p, td, nt, p->block, idx, off);
    }
    return (int)n;
}

static void eb_kern_perm_table(int n, const int32_t *t, const double *x0,
                       const double *x1, int nsrc, double *out)
{
    const int32_t *to = t, *t0 = t + TABLE_MAX, *t1 = t + 2 * TABLE_MAX;
    if (nsrc == 2)
        for (int e = 0; e < n; e++)
            out[to[e]] = x0[t0[e]] * x1[t1[e]];
    else
        for (int e = 0; e < n; e++)
            out[to[e]] = x0[t0[e]];
}

/* The loop nest with the split dim limited to [lo, hi): every dim of more
 * than one block steps by its block; the tile covers the blocked dims. */
static void eb_kern_perm_nest(const eb_perm *p, const double *x0,
                              const double *x1, double *out, int64_t lo,
                              int64_t hi)
{
    int r = p->rank;
    int64_t beg[EB_MAX_RANK], end[EB_MAX_RANK], pos[EB_MAX_RANK],
        ext[EB_MAX_RANK];
    int td[EB_MAX_RANK], nt = 0, ld[EB_MAX_RANK], nl = 0;
    int64_t off[3] = {0, 0, 0};
    for (int d = 0; d < r; d++) {
        beg[d] = d == p->split ? lo : 0;
        end[d] = d == p->split ? hi : p->shape[d];
        pos[d] = beg[d];
        ext[d] = end[d] - beg[d] < p->block[d] ? end[d] - beg[d] : p->block[d];
        if (p->block[d] > 1)
            td[nt++] = d;
        if (end[d] - beg[d] > p->block[d])
            ld[nl++] = d;
        for (int s = 0; s < 3; s++)
            off[s] += beg[d] * p->stride[s][d];
        if (beg[d] >= end[d])
            return;
    }
    int avx2 = !p->scalar && __builtin_cpu_supports("avx2");
    int32_t table[3 * TABLE_MAX];
    int ntab = p->mode == EB_PERM_GENERIC || !avx2
                   ? build_table(p, td, nt, table) : 0;
    for (;;) {
        int full = 1;
        for (int k = 0; k < nt; k++)
            full = full && ext[td[k]] == p->block[td[k]];
        if (ntab && full)
            eb_kern_perm_table(ntab, table, x0 + off[1], x1 + off[2], p->nsrc,
                       out + off[0]);
        else
            tile(p, td, nt, ext, x0 + off[1], x1 + off[2], out + off[0],
                 avx2);
        int k = nl - 1;
        for (; k >= 0; k--) {
            int d = ld[k];
            int64_t b = p->block[d];
            pos[d] += b;
            for (int s = 0; s < 3; s++)
                off[s] += b * p->stride[s][d];
            if (pos[d] < end[d]) {
                ext[d] = end[d] - pos[d] < b ? end[d] - pos[d] : b;
                break;
            }
            for (int s = 0; s < 3; s++)
                off[s] -= (pos[d] - beg[d]) * p->stride[s][d];
            pos[d] = beg[d];
            ext[d] = end[d] - beg[d] < b ? end[d] - beg[d] : b;
        }
        if (k < 0)
            break;
    }
    if (p->stream && avx2)
        _mm_sfence(); /* streamed stores visible before the part ends */
}

typedef struct {
    const eb_perm *p;
    const double *x0, *x1;
    double *out;
} perm_job;

static void perm_part(void *arg, int part, int nparts)
{
    const perm_job *j = arg;
    const eb_perm *p = j->p;
    int d = p->split;
    int64_t b = p->block[d];
    long long lo, hi;
    eb_team_split((p->shape[d] + b - 1) / b, part, nparts, &lo, &hi);
    int64_t l = lo * b, h = hi * b < p->shape[d] ? hi * b : p->shape[d];
    if (l < h)
        eb_kern_perm_nest(p, j->x0, j->x1, j->out, l, h);
}

/* One element of a dtype other than float64: out = a or out = a * b. */
static void elem_dt(eb_dtype dt, int nsrc, char *o, const char *a,
                    const char *b)
{
    if (nsrc == 1) {
        memcpy(o, a, eb_dtype_size(dt));
    } else if (dt == EB_F32) {
        float x, y;
        memcpy(&x, a, 4);
        memcpy(&y, b, 4);
        x *= y;
        memcpy(o, &x, 4);
    } else if (dt == EB_C64) {
        float x[2], y[2], z[2];
        memcpy(x, a, 8);
        memcpy(y, b, 8);
        z[0] = x[0] * y[0] - x[1] * y[1];
        z[1] = x[0] * y[1] + x[1] * y[0];
        memcpy(o, z, 8);
    } else {
        double x[2], y[2], z[2];
        memcpy(x, a, 16);
        memcpy(y, b, 16);
        z[0] = x[0] * y[0] - x[1] * y[1];
        z[1] = x[0] * y[1] + x[1] * y[0];
        memcpy(o, z, 16);
    }
}

/* The whole box element by element, for dtypes other than float64. */
static void eb_kern_perm_dt(const eb_perm *p, const void *x0, const void *x1,
                            void *out)
{
    int64_t es = (int64_t)eb_dtype_size(p->dt);
    int64_t idx[EB_MAX_RANK] = {0}, off[3] = {0, 0, 0};
    int td[EB_MAX_RANK];
    for (int d = 0; d < p->rank; d++)
        td[d] = d;
    do {
        elem_dt(p->dt, p->nsrc, (char *)out + off[0] * es,
                (const char *)x0 + off[1] * es,
                (const char *)x1 + off[2] * es);
    } while (p->rank > 0 &&
             odometer_next(p, td, p->rank, p->shape, idx, off));
}

void eb_perm_exec(const eb_perm *p, const void *x0v, const void *x1v,
                  void *outv, eb_team *team)
{
    if (p->dt != EB_F64) {
        eb_kern_perm_dt(p, x0v, p->nsrc == 2 ? x1v : x0v, outv);
        return;
    }
    const double *x0 = x0v, *x1 = x1v;
    double *out = outv;
    if (p->nsrc == 1)
        x1 = x0; /* never read: its strides are 0 */
    if (p->rank == 0) {
        out[0] = p->nsrc == 2 ? x0[0] * x1[0] : x0[0];
        return;
    }
    if (eb_team_size(team) > 1 && p->split >= 0 &&
        p->elems >= PERM_PARALLEL_MIN) {
        perm_job j = {.p = p, .x0 = x0, .x1 = x1, .out = out};
        eb_team_run(team, perm_part, &j);
        return;
    }
    eb_kern_perm_nest(p, x0, x1, out, 0,
                      p->split >= 0 ? p->shape[p->split] : 0);
}
