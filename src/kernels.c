/* kernels: dot, small GEMM, vector-batch GEMM, reduction (elementwise
 * multiplies, outer products and permutations: permute.c). */
#include "kernels.h"

#include "gemm512.h"
#include "simd.h"
#include "vec512.h"

#include <immintrin.h>
#include <string.h>

double eb_kern_dot(int64_t K, const double *a, int64_t sa, const double *b,
                   int64_t sb)
{
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    int64_t k = 0;
    if (sa == 1 && sb == 1) {
        for (; k + 4 <= K; k += 4) {
            s0 += a[k] * b[k];
            s1 += a[k + 1] * b[k + 1];
            s2 += a[k + 2] * b[k + 2];
            s3 += a[k + 3] * b[k + 3];
        }
    }
    for (; k < K; k++)
        s0 += a[k * sa] * b[k * sb];
    return (s0 + s1) + (s2 + s3);
}

/* Largest C tile the small GEMM keeps on the stack (C strided both ways). */
enum { SMALL_TILE = 1024 };

/* Columns per tile where C, strided both ways, has more than SMALL_TILE
 * (tiles of 4 rows and more). */
enum { SMALL_TILE_COLS = 256 };

/* Rows of a vector-batch block the packer prefetches ahead. */
#define VEC_PREFETCH 8

/* Contracted rows per slice of the vector-batch GEMM (see below). */
#ifndef VEC_KSLICE
#define VEC_KSLICE 48
#endif

/*
 * The small GEMM works on column chunks of C, at most 16 wide: every
 * chunk is computed in full-width register blocks of mr rows by nv
 * vectors of 4 (8 to 12 accumulators), the chunk's last vector shifted
 * left to end at the chunk's last column (it recomputes a few columns of
 * the previous vector, bit for bit the same values) so that no column is
 * left to a one-chain tail loop. K is walked through offset tables (row k
 * of A's block at aoff[k], of B's chunk at boff[k]), which is how a
 * contracted group that is two dims far apart in memory (k1, k) is
 * read in place instead of being copied into a compact operand first;
 * K is cut into slices whose panel of B (slice x chunk) stays in L1, and
 * slices after the first add to C.
 */
enum { KC_PANEL = 2560, KC_MAX = 512, CHUNK_MAX = 16 };

/* Elements of B (256 KiB, half an L2) from which the row kernel prefetches
 * B's next slice while computing one (eb_kern_gemm_rowc_avx2). */
enum { PREFETCH_MIN_B = 32768 };

/* A of at least PREFETCH_MIN_A elements (beyond L1), rows contiguous
 * along k: the row kernel's first panel prefetches A's rows about
 * PREFETCH_A_BYTES ahead of the row block it computes, so that an A
 * streamed from memory does not stall every block (1748 x 19 x 19 with A
 * from DRAM: docs/bench.md, "Small GEMMs, third round"). */
enum { PREFETCH_MIN_A = 4096, PREFETCH_A_BYTES = 4096 };

/* Where the k-vector kernel (below) beats the row kernel with B's panels
 * copied: contiguous runs of K of at least KVEC_MIN_K, a K of at least
 * KVEC_MIN_TOTAL in all, and a side of C at most KVEC_MAX_SIDE (measured:
 * 19 x 19 x 1710 at 32 against 22 GFLOP/s, 404 x 21 x 480 at 34 against
 * 24; but 100 x 100 x 100 at 28 against 34 and 1710 x 19 x 19 at 21
 * against 24, docs/engine-gemm.md). */
enum { KVEC_MIN_K = 8, KVEC_MIN_TOTAL = 64, KVEC_MAX_SIDE = 32 };

/* Rows per register block for nv <= 4 vectors: 8 to 12 accumulators and
 * the vectors of B of one k in 16 registers. */
static int block_rows(int nv) { return nv <= 3 ? 4 : 3; }

/* Column of vector v of a chunk of nv vectors whose last one starts at
 * `tail`. */
#define EB_COL(v, nv, tail) ((v) == (nv) - 1 ? (tail) : 4 * (v))

/* One register block: mr rows by nv vectors of C (masked: one vector of
 * fewer than 4 columns), over kc contracted rows. */
__attribute__((target("avx2,fma"), always_inline)) static inline void
eb_kern_gemm_block_avx2(int64_t kc, const double *ar, int64_t sam,
                        int64_t sak, const int64_t *aoff, const double *b,
                        int64_t sbk, const int64_t *boff, double *cr,
                        int64_t scm, int64_t tail, __m256i mask, int add,
                        const int mr, const int nv, const int masked,
                        const int tab)
{
    __m256d acc[4][4];
    _Pragma("GCC unroll 4")
    for (int r = 0; r < mr; r++)
        _Pragma("GCC unroll 4")
        for (int v = 0; v < nv; v++) {
            const double *o = cr + r * scm + EB_COL(v, nv, tail);
            acc[r][v] = !add     ? _mm256_setzero_pd()
                        : masked ? _mm256_maskload_pd(o, mask)
                                 : _mm256_loadu_pd(o);
        }
    for (int64_t k = 0; k < kc; k++) {
        const double *bk = b + (tab ? boff[k] : k * sbk);
        const double *ak = ar + (tab ? aoff[k] : k * sak);
        if (nv + mr * nv + 1 <= 16) {
            /* Vectors of B in registers, one broadcast of A at a time:
             * nv + mr nv + 1 of the 16 registers. */
            __m256d bv[4];
            _Pragma("GCC unroll 4")
            for (int v = 0; v < nv; v++)
                bv[v] = masked ? _mm256_maskload_pd(bk, mask)
                               : _mm256_loadu_pd(bk + EB_COL(v, nv, tail));
            _Pragma("GCC unroll 4")
            for (int r = 0; r < mr; r++) {
                __m256d av = _mm256_broadcast_sd(ak + r * sam);
                _Pragma("GCC unroll 4")
                for (int v = 0; v < nv; v++)
                    acc[r][v] = _mm256_fmadd_pd(av, bv[v], acc[r][v]);
            }
        } else {
            /* Broadcasts of A in registers, one vector of B at a time:
             * mr + mr nv + 1 registers. */
            __m256d av[4];
            _Pragma("GCC unroll 4")
            for (int r = 0; r < mr; r++)
                av[r] = _mm256_broadcast_sd(ak + r * sam);
            _Pragma("GCC unroll 4")
            for (int v = 0; v < nv; v++) {
                __m256d bv = masked ? _mm256_maskload_pd(bk, mask)
                                    : _mm256_loadu_pd(bk + EB_COL(v, nv, tail));
                _Pragma("GCC unroll 4")
                for (int r = 0; r < mr; r++)
                    acc[r][v] = _mm256_fmadd_pd(av[r], bv, acc[r][v]);
            }
        }
    }
    _Pragma("GCC unroll 4")
    for (int r = 0; r < mr; r++)
        _Pragma("GCC unroll 4")
        for (int v = 0; v < nv; v++) {
            double *o = cr + r * scm + EB_COL(v, nv, tail);
            if (masked)
                _mm256_maskstore_pd(o, mask, acc[r][v]);
            else
                _mm256_storeu_pd(o, acc[r][v]);
        }
}

/* eb_kern_gemm_block_avx2 for a block of mr (1-4) rows by nv vectors,
 * narrow: a chunk of fewer than 4 columns (one masked vector). */
__attribute__((target("avx2,fma"), always_inline)) static inline void
gemm_block_any(int64_t kc, const double *ar, int64_t sam, int64_t sak,
               const int64_t *aoff, const double *b, int64_t sbk,
               const int64_t *boff, double *cr, int64_t scm, int64_t tail,
               __m256i mask, int add, int mr, int nv, int narrow,
               const int tab)
{
#define EB_BLK(MR, NV, MASKED) \
    eb_kern_gemm_block_avx2(kc, ar, sam, sak, aoff, b, sbk, boff, cr, scm, \
                            tail, mask, add, MR, NV, MASKED, tab)
#define EB_BLK_NV(MR) \
    switch (narrow ? 0 : nv) { \
    case 0: EB_BLK(MR, 1, 1); break; \
    case 1: EB_BLK(MR, 1, 0); break; \
    case 2: EB_BLK(MR, 2, 0); break; \
    case 3: EB_BLK(MR, 3, 0); break; \
    default: EB_BLK(MR, 4, 0); break; \
    }
    switch (mr) {
    case 4: EB_BLK_NV(4) break;
    case 3: EB_BLK_NV(3) break;
    case 2: EB_BLK_NV(2) break;
    default: EB_BLK_NV(1) break;
    }
#undef EB_BLK_NV
#undef EB_BLK
}

/* Every cache line of the run p[0 .. n), n >= 1. Always inlined: GCC 12
 * at -O2 takes a helper whose only effect is prefetches with a loop for a
 * pure function and deletes its calls (none were left in the binary). */
__attribute__((always_inline)) static inline void
prefetch_lines(const double *p, int64_t n)
{
    for (int64_t x = 0; x < n; x += 8)
        _mm_prefetch((const char *)(p + x), _MM_HINT_T0);
    _mm_prefetch((const char *)(p + n - 1), _MM_HINT_T0);
}

/* All rows of one chunk of w columns for one slice of K: blocks of
 * block_rows(nv) rows, then the remaining rows as one smaller block. */
__attribute__((target("avx2,fma"), always_inline)) static inline void
eb_kern_gemm_chunk_avx2(int64_t M, int64_t w, int64_t nq, int64_t kc,
                        const double *a, int64_t sam, int64_t sak,
                        const int64_t *aoff, const double *b, int64_t sbk,
                        const int64_t *boff, double *c, int64_t scm, int add,
                        const double *pfb, int pfa, const int tab)
{
    int nv = w < 4 ? 1 : (int)((w + 3) / 4), mrow = block_rows(nv);
    /* Rows of A prefetched ahead of the row block (pfa: A's rows are
     * contiguous along k and may come from memory): about
     * PREFETCH_A_BYTES ahead, at least one block. */
    int64_t pfd = PREFETCH_A_BYTES / (8 * kc);
    pfd = pfd < mrow ? mrow : pfd;
    int64_t tail = w < 4 ? 0 : w - 4;
    __m256i mask = _mm256_setr_epi64x(-1, w > 1 ? -1 : 0, w > 2 ? -1 : 0,
                                      w > 3 ? -1 : 0);
    int64_t nblk = (M + mrow - 1) / mrow;
    for (int64_t m = 0; m < M; m += mrow) {
        int mr = M - m < mrow ? (int)(M - m) : mrow;
        const double *ar = a + m * sam;
        if (pfa)
            for (int64_t r = m + pfd; r < m + pfd + mr && r < M; r++) {
                const double *pa = a + r * sam;
                if (tab) {
                    /* Runs of pfa contracted elements (at most a line)
                     * wherever the table puts them. */
                    for (int64_t x = 0; x < kc; x += pfa)
                        _mm_prefetch((const char *)(pa + aoff[x]),
                                     _MM_HINT_T0);
                    _mm_prefetch((const char *)(pa + aoff[kc - 1]),
                                 _MM_HINT_T0);
                    continue;
                }
                prefetch_lines(pa, kc);
            }
        for (int64_t q = 0; q < nq; q++) {
            const double *bq = b + q * w;
            double *cr = c + m * scm + q * w;
            if (pfb) {
                /* Row block i of nblk prefetches its share of the next
                 * slice's rows of this chunk into L2 (all blocks together:
                 * the whole slice, spread over the slice's computation). */
                int64_t i = m / mrow;
                const double *pf = pfb + q * w;
                for (int64_t k = kc * i / nblk; k < kc * (i + 1) / nblk;
                     k++) {
                    for (int64_t x = 0; x < w; x += 8)
                        _mm_prefetch((const char *)(pf + k * sbk + x),
                                     _MM_HINT_T1);
                    _mm_prefetch((const char *)(pf + k * sbk + w - 1),
                                 _MM_HINT_T1);
                }
            }
            gemm_block_any(kc, ar, sam, sak, aoff, bq, sbk, boff, cr, scm, tail,
                           mask, add, mr, nv, w < 4, tab);
        }
    }
}

/* Width of the chunk that starts `left` columns before C's end: 12 (a
 * 4 x 3 block) while more than CHUNK_MAX remain, then all the rest. A
 * last chunk of 17 to 24 columns as one block of 2 rows by 5 or 6
 * vectors ran at 23-25 GFLOP/s where 12 and the rest run at 33-39
 * (600 x N x 19, N = 17..24, thread CPU time; docs/bench.md, "Small
 * GEMMs, third round"). */
static int64_t chunk_width(int64_t left)
{
    return left > CHUNK_MAX ? 12 : left;
}

/* Chunks of 12 in the panel that starts `left` columns before C's end,
 * for a K of `total`: a panel of B (slice x all its chunks) about
 * KC_PANEL elements, so that each row block walks along B's rows
 * (streams the hardware prefetcher follows) rather than down 12-wide
 * strips of them; 1 for the last chunk. */
static int64_t panel_chunks(int64_t left, int64_t total)
{
    if (left <= CHUNK_MAX)
        return 1;
    int64_t full = (left - CHUNK_MAX + 11) / 12;
    int64_t want = KC_PANEL / (12 * (total < 64 ? total : 64));
    want = want < 1 ? 1 : want;
    return full < want ? full : want;
}

void eb_gemm_k_offsets(int64_t f0, int64_t kc, int64_t K, const eb_gemm_k *k,
                       int64_t *aoff, int64_t *boff)
{
    int64_t k1 = f0 / K, kk = f0 % K;
    int64_t ao = k1 * k->sak1 + kk * k->sak, bo = k1 * k->sbk1 + kk * k->sbk;
    for (int64_t i = 0; i < kc; i++) {
        aoff[i] = ao;
        boff[i] = bo;
        ao += k->sak;
        bo += k->sbk;
        if (++kk == K) {
            kk = 0;
            ao += k->sak1 - K * k->sak;
            bo += k->sbk1 - K * k->sbk;
        }
    }
}

/* Rows of C from which a chunk of B is packed even when it could be read
 * in place: the packed panel is aligned, its rows are contiguous, and
 * the copy (kc w elements) is small against M kc w multiply-adds. */
/* C = A B for row-major C (scn = 1) and any A and B: chunk by chunk of
 * columns, slice by slice of K. Both operands are read in place, through
 * offset tables when K has two levels, except a chunk of B whose columns
 * are not contiguous: that is copied slice by slice into a row-major panel
 * (kc w elements copied against M kc w multiply-adds). Copying B also
 * where it could be read in place was measured slower (docs/engine-gemm.md). */
__attribute__((target("avx2,fma"))) static void
eb_kern_gemm_rowc_avx2(int64_t M, int64_t N, int64_t K, const double *a,
                       int64_t sam, const double *b, int64_t sbn,
                       const eb_gemm_k *k, double *c, int64_t scm)
{
    int64_t aoff[KC_MAX], boff[KC_MAX];
    double bt[KC_PANEL];
    int64_t total = k->K1 * K;
    for (int64_t n0 = 0; n0 < N;) {
        int64_t w = chunk_width(N - n0), nq = panel_chunks(N - n0, total);
        int64_t pw = w * nq;
        /* (No division for the common small case: tiny batched GEMMs
         * call this thousands of times per step.) */
        int64_t kslice = total * pw <= KC_PANEL && total <= KC_MAX ? total
                         : KC_PANEL / pw < KC_MAX ? KC_PANEL / pw
                                                  : KC_MAX;
        for (int64_t f0 = 0; f0 < total; f0 += kslice) {
            int64_t kc = total - f0 < kslice ? total - f0 : kslice;
            const double *bp = b + n0 * sbn;
            if (k->K1 == 1 && sbn == 1) {
                /* One stride per operand: no tables. The row blocks
                 * prefetch the panel's next slice (or the next panel's
                 * first) into L2, so that a B streamed from memory (an
                 * input larger than the caches) arrives while this slice
                 * computes: 404 x 21 x 480 with B from DRAM rose from 18
                 * to 29 GFLOP/s (docs/bench.md, "Small GEMMs, this
                 * round"). A B of fewer than PREFETCH_MIN_B elements is
                 * taken to be in the caches already. */
                const double *pfb =
                    total * N < PREFETCH_MIN_B ? NULL
                    : f0 + kslice < total      ? bp + (f0 + kslice) * k->sbk
                    : n0 + pw < N              ? b + n0 + pw
                                               : NULL;
                eb_kern_gemm_chunk_avx2(M, w, nq, kc, a + f0 * k->sak, sam,
                                        k->sak, NULL, bp + f0 * k->sbk,
                                        k->sbk, NULL, c + n0, scm, f0 > 0,
                                        pfb, n0 == 0 && k->sak == 1 &&
                                        M * total >= PREFETCH_MIN_A, 0);
                continue;
            }
            if (k->K1 == 1) {
                /* One stride per operand but B's columns apart: its
                 * slice of the panel is copied row-major, A is read in
                 * place without tables (through tables, str_mps's 2185
                 * x 19 x 19 with B[n][k] ran at 20 GFLOP/s in cache). */
                eb_gemm_pack_b(kc, pw, bp + f0 * k->sbk, k->sbk, NULL, sbn,
                               bt);
                eb_kern_gemm_chunk_avx2(M, w, nq, kc, a + f0 * k->sak, sam,
                                        k->sak, NULL, bt, pw, NULL, c + n0,
                                        scm, f0 > 0, NULL,
                                        n0 == 0 && k->sak == 1 &&
                                            M * total >= PREFETCH_MIN_A,
                                        0);
                continue;
            }
            eb_gemm_k_offsets(f0, kc, K, k, aoff, boff);
            if (sbn != 1) {
                eb_gemm_pack_b(kc, pw, bp, 0, boff, sbn, bt);
                for (int64_t i = 0; i < kc; i++)
                    boff[i] = i * pw;
                bp = bt;
            }
            /* A's rows prefetched in its contiguous runs of K (K1 runs
             * of K apart: lm's 7984 x 16 x (16 x 4) read A in 16
             * streams). */
            int pfa = n0 == 0 && k->sak == 1 && M * total >= PREFETCH_MIN_A
                          ? (int)(K < 8 ? K : 8)
                          : 0;
            eb_kern_gemm_chunk_avx2(M, w, nq, kc, a, sam, 0, aoff, bp, 0, boff,
                                    c + n0, scm, f0 > 0, NULL, pfa, 1);
        }
        n0 += pw;
    }
}

void eb_gemm_few_k_pack(int64_t M, int64_t K, const double *a, int64_t sam,
                        const eb_gemm_k *k, int64_t *boff, double *ap)
{
    for (int64_t k1 = 0, t = 0; k1 < k->K1; k1++)
        for (int64_t kk = 0; kk < K; kk++, t++) {
            boff[t] = k1 * k->sbk1 + kk * k->sbk;
            for (int64_t r = 0; r < M; r++)
                ap[t * M + r] = a[r * sam + k1 * k->sak1 + kk * k->sak];
        }
}

void eb_gemm_batch_tables(int64_t K, const eb_gemm_k *k, int64_t n,
                          int64_t *aoff, int64_t *boff, int64_t *poff)
{
    eb_gemm_k_offsets(0, k->K1 * K, K, k, aoff, boff);
    for (int64_t i = 0; i < k->K1 * K; i++)
        poff[i] = i * n;
}

/* eb_gemm_pack_b's rows i .. i + 3, one after another in B (at src): per
 * 4 columns, 4 loads of the rows' 4 adjacent elements and a 4 x 4
 * transpose in registers, instead of 16 scalar copies. */
__attribute__((target("avx2"))) static void
pack_b_rows4_avx2(int64_t n, const double *src, int64_t sbn, double *bt)
{
    int64_t j = 0;
    for (; j + 4 <= n; j += 4) {
        __m256d r[4];
        _Pragma("GCC unroll 4")
        for (int q = 0; q < 4; q++)
            r[q] = _mm256_loadu_pd(src + (j + q) * sbn);
        eb_transpose4(r);
        _Pragma("GCC unroll 4")
        for (int x = 0; x < 4; x++)
            _mm256_storeu_pd(bt + x * n + j, r[x]);
    }
    for (; j < n; j++)
        for (int x = 0; x < 4; x++)
            bt[x * n + j] = src[j * sbn + x];
}

void eb_gemm_pack_b(int64_t kc, int64_t n, const double *b, int64_t sbk,
                    const int64_t *boff, int64_t sbn, double *bt)
{
    /* Rows in fours that are adjacent in B (B's columns apart, its rows
     * a run: lm eager's B[n][k] with k innermost) go through 4 x 4
     * transposes; any other row element by element. */
    int avx2 = sbn != 1 && n >= 4 && __builtin_cpu_supports("avx2");
    int64_t i = 0;
    while (i < kc) {
        int64_t r0 = boff ? boff[i] : i * sbk;
        if (avx2 && i + 4 <= kc &&
            (boff ? boff[i + 1] == r0 + 1 && boff[i + 2] == r0 + 2 &&
                        boff[i + 3] == r0 + 3
                  : sbk == 1)) {
            pack_b_rows4_avx2(n, b + r0, sbn, bt + i * n);
            i += 4;
            continue;
        }
        const double *src = b + r0;
        for (int64_t j = 0; j < n; j++)
            bt[i * n + j] = src[j * sbn];
        i++;
    }
}

/* Is a GEMM of N columns and K contracted rows (one level) one chunk of
 * one slice of eb_kern_gemm_rowc_avx2? */
static int one_panel_avx2(int64_t N, int64_t K)
{
    return N <= CHUNK_MAX && K <= KC_MAX && K * N <= KC_PANEL;
}

/* W calls of eb_kern_gemm_rowc_avx2 for GEMMs of one chunk of one slice
 * (one_panel_avx2(N, k->K1 K)) at strides saw, sbw, scw: the same chunk
 * of row blocks over the same copy of B where its columns are apart (a
 * two-level K through tables made once), so the same results bit for
 * bit, without the set-up per element. */
__attribute__((target("avx2,fma"), always_inline)) static inline void
batch_avx2(int64_t W, int64_t M, int64_t N, int64_t total, const double *a,
           int64_t sam, int64_t saw, const double *b, int64_t sbn,
           int64_t sbw, const eb_gemm_k *k, double *c, int64_t scm,
           int64_t scw, double *bt, const int64_t *aoff, const int64_t *boff,
           const int64_t *poff, const int tab)
{
    int pf = eb_gemm_batch_pf(W, M, N, total, sam);
    for (int64_t w = 0; w < W; w++) {
        const double *bw = b + w * sbw;
        if (pf && w + 1 < W)
            eb_gemm_prefetch_a(a + (w + 1) * saw, M, total, tab ? 0 : k->sak,
                               tab ? aoff : NULL);
        int64_t sb = k->sbk;
        const int64_t *bo = boff;
        if (sbn != 1) {
            eb_gemm_pack_b(total, N, bw, k->sbk, tab ? boff : NULL, sbn, bt);
            bw = bt;
            sb = N;
            bo = poff;
        }
        eb_kern_gemm_chunk_avx2(M, N, 1, total, a + w * saw, sam,
                                tab ? 0 : k->sak, aoff, bw, tab ? 0 : sb, bo,
                                c + w * scw, scm, 0, NULL, 0, tab);
    }
}

__attribute__((target("avx2,fma"))) static void
eb_kern_gemm_batch_avx2(int64_t W, int64_t M, int64_t N, int64_t K,
                        const double *a, int64_t sam, int64_t saw,
                        const double *b, int64_t sbn, int64_t sbw,
                        const eb_gemm_k *k, double *c, int64_t scm,
                        int64_t scw)
{
    double bt[KC_PANEL];
    int64_t total = k->K1 * K;
    if (k->K1 == 1) {
        batch_avx2(W, M, N, total, a, sam, saw, b, sbn, sbw, k, c, scm, scw,
                   bt, NULL, NULL, NULL, 0);
        return;
    }
    int64_t aoff[KC_MAX], boff[KC_MAX], poff[KC_MAX];
    eb_gemm_batch_tables(K, k, N, aoff, boff, poff);
    batch_avx2(W, M, N, total, a, sam, saw, b, sbn, sbw, k, c, scm, scw, bt,
               aoff, boff, poff, 1);
}

/*
 * C = A B where both operands are contiguous along k (A row-major, B
 * column-major: the layout of two tensors contracted over their last
 * labels): vectors run along k, a block of mr rows by nr columns of C is
 * mr nr dot products in registers (3 x 4: 12 accumulators, 7 loads per 12
 * multiply-adds), summed across lanes at the end. K's tail of 1 to 3 is a
 * masked load. K is cut into slices (whole rows k1 of a two-level K, or
 * runs of KVEC_SLICE) so that the slice of all of B's columns stays in L1
 * while the rows of A pass; slices after the first add to C. Needs no
 * copy of either operand, where the row kernel would copy B's panels
 * element by element.
 */
__attribute__((target("avx2,fma"), always_inline)) static inline void
eb_kern_dot_block_avx2(int64_t x0, int64_t len, int64_t k1a, int64_t k1b,
                       const double *a, int64_t sam, const double *b,
                       int64_t sbn, const eb_gemm_k *k, double *c,
                       int64_t scm, int64_t scn, __m256i mask, int add,
                       const int mr, const int nr)
{
    __m256d acc[3][4];
    _Pragma("GCC unroll 3")
    for (int r = 0; r < mr; r++)
        _Pragma("GCC unroll 4")
        for (int j = 0; j < nr; j++)
            acc[r][j] = _mm256_setzero_pd();
    /* Row pointers advance by the outer K's strides: nothing per vector
     * but the loads and multiply-adds, the tail of 1 to 3 after the
     * loop (indexing and a tail test inside it cost str_mps's 19 x 19
     * x (105 x 19) steps 3.5 instructions per multiply-add). */
    const double *ar[3], *br[4];
    _Pragma("GCC unroll 3")
    for (int r = 0; r < mr; r++)
        ar[r] = a + r * sam + k1a * k->sak1 + x0;
    _Pragma("GCC unroll 4")
    for (int j = 0; j < nr; j++)
        br[j] = b + j * sbn + k1a * k->sbk1 + x0;
    int64_t full = len / 4 * 4;
    for (int64_t k1 = k1a; k1 < k1b; k1++) {
        for (int64_t x = 0; x < full; x += 4) {
            __m256d av[3];
            _Pragma("GCC unroll 3")
            for (int r = 0; r < mr; r++)
                av[r] = _mm256_loadu_pd(ar[r] + x);
            _Pragma("GCC unroll 4")
            for (int j = 0; j < nr; j++) {
                __m256d bv = _mm256_loadu_pd(br[j] + x);
                _Pragma("GCC unroll 3")
                for (int r = 0; r < mr; r++)
                    acc[r][j] = _mm256_fmadd_pd(av[r], bv, acc[r][j]);
            }
        }
        if (full < len) {
            __m256d av[3];
            _Pragma("GCC unroll 3")
            for (int r = 0; r < mr; r++)
                av[r] = _mm256_maskload_pd(ar[r] + full, mask);
            _Pragma("GCC unroll 4")
            for (int j = 0; j < nr; j++) {
                __m256d bv = _mm256_maskload_pd(br[j] + full, mask);
                _Pragma("GCC unroll 3")
                for (int r = 0; r < mr; r++)
                    acc[r][j] = _mm256_fmadd_pd(av[r], bv, acc[r][j]);
            }
        }
        _Pragma("GCC unroll 3")
        for (int r = 0; r < mr; r++)
            ar[r] += k->sak1;
        _Pragma("GCC unroll 4")
        for (int j = 0; j < nr; j++)
            br[j] += k->sbk1;
    }
    /* Each row's nr sums across lanes at once, (x0 + x1) + (x2 + x3):
     * two horizontal adds, two lane swaps and an add for up to four dot
     * products (one at a time took five instructions each; str_mps's
     * trace sample 92.4M -> 90.2M instructions); a row of four
     * contiguous C elements is updated as one vector. */
    _Pragma("GCC unroll 3")
    for (int r = 0; r < mr; r++) {
        __m256d z = _mm256_setzero_pd();
        __m256d t0 = _mm256_hadd_pd(acc[r][0], nr > 1 ? acc[r][1] : z);
        __m256d t1 = _mm256_hadd_pd(nr > 2 ? acc[r][2] : z,
                                    nr > 3 ? acc[r][3] : z);
        __m256d v = _mm256_add_pd(_mm256_permute2f128_pd(t0, t1, 0x20),
                                  _mm256_permute2f128_pd(t0, t1, 0x31));
        double *o = c + r * scm;
        if (nr == 4 && scn == 1) {
            _mm256_storeu_pd(o, add ? _mm256_add_pd(_mm256_loadu_pd(o), v)
                                    : v);
            continue;
        }
        double w[4];
        _mm256_storeu_pd(w, v);
        _Pragma("GCC unroll 4")
        for (int j = 0; j < nr; j++)
            o[j * scn] = add ? o[j * scn] + w[j] : w[j];
    }
}

/* Contracted elements per slice of the k-vector kernel (B's slice of 24
 * columns: 24 KiB); where A is the shorter side, as many as make A's
 * slice KVEC_A_SLICE elements (128 KiB, in L2): B's rows then stream
 * from memory in runs of that length, not 1 KiB (str_matrix_chain's
 * GEMMs of 21 x 404-505 x 462-480 and 30 x 303 x 490, operands cold,
 * thread CPU time, medians of 6: 12.5-14.7 -> 16.6-20.7 GFLOP/s). */
enum { KVEC_SLICE = 128, KVEC_A_SLICE = 16384 };

/* One mr x nr block of dot products (mr <= 3, nr <= 4) of a slice. */
__attribute__((target("avx2,fma"), always_inline)) static inline void
kvec_block(int mr, int nr, int64_t x0, int64_t len, int64_t k1a, int64_t k1b,
           const double *ap, int64_t sam, const double *bp, int64_t sbn,
           const eb_gemm_k *k, double *cp, int64_t scm, int64_t scn,
           __m256i mask, int add)
{
#define EB_DOT(MR, NR) \
    eb_kern_dot_block_avx2(x0, len, k1a, k1b, ap, sam, bp, sbn, k, cp, scm, \
                           scn, mask, add, MR, NR)
#define EB_DOT_NR(MR) \
    switch (nr) { \
    case 4: EB_DOT(MR, 4); break; \
    case 3: EB_DOT(MR, 3); break; \
    case 2: EB_DOT(MR, 2); break; \
    default: EB_DOT(MR, 1); break; \
    }
    switch (mr) {
    case 3: EB_DOT_NR(3) break;
    case 2: EB_DOT_NR(2) break;
    default: EB_DOT_NR(1) break;
    }
#undef EB_DOT_NR
#undef EB_DOT
}

/* The cache lines of one operand's slice: k1n rows k1 (sk1 apart) of
 * `rows` runs of len elements (srow apart), a row k1 read as one run
 * where its runs leave gaps of less than a line. */
typedef struct {
    const char *base;
    int64_t k1n, sk1, rows, srow, len; /* bytes but k1n, rows */
    int64_t run, line, end;            /* next line: run's [line, end] */
} pf_cursor;

static void pf_start(pf_cursor *p, const double *base, int64_t k1n,
                     int64_t sk1, int64_t rows, int64_t srow, int64_t len)
{
    *p = (pf_cursor){(const char *)base, k1n, sk1 * 8, rows, srow * 8,
                     len * 8, 0, 0, -1};
    if (rows > 1 && srow - len < 8) {
        p->len = ((rows - 1) * srow + len) * 8;
        p->rows = 1;
    }
}

/* Prefetches the next n lines of the slice (none once all are). */
static inline void pf_next(pf_cursor *p, int64_t n)
{
    while (n > 0) {
        if (p->line > p->end) {
            if (p->run >= p->k1n * p->rows)
                return;
            uintptr_t r = (uintptr_t)(p->base + p->run / p->rows * p->sk1 +
                                      p->run % p->rows * p->srow);
            p->line = (int64_t)(r & ~(uintptr_t)63);
            p->end = (int64_t)((r + (uintptr_t)p->len - 1) & ~(uintptr_t)63);
            p->run++;
        }
        int64_t k = (p->end - p->line) / 64 + 1;
        k = k < n ? k : n;
        const char *l = (const char *)(uintptr_t)p->line;
        int64_t i = 0;
        for (; i + 4 <= k; i += 4) {
            __builtin_prefetch(l + 64 * i);
            __builtin_prefetch(l + 64 * i + 64);
            __builtin_prefetch(l + 64 * i + 128);
            __builtin_prefetch(l + 64 * i + 192);
        }
        for (; i < k; i++)
            __builtin_prefetch(l + 64 * i);
        p->line += 64 * k;
        n -= k;
    }
}

/* The slice's blocks walk the longer operand once: rows of B outer when
 * A is the shorter side (its slice stays in cache while B's rows pass),
 * else rows of A outer. With A's rows outer, str_matrix_chain's 21 x 505
 * x 462 (C^T of a column-major C) read B's 505-row slice, 517 KiB, once
 * per block of 3 rows of A: more than L2. */
__attribute__((target("avx2,fma"))) static void
eb_kern_gemm_kvec_avx2(int64_t M, int64_t N, int64_t K, const double *a,
                       int64_t sam, const double *b, int64_t sbn,
                       const eb_gemm_k *k, double *c, int64_t scm, int64_t scn)
{
    /* Slices: rows k1 of a two-level K, else runs of the one-level K. */
    int64_t slice = KVEC_SLICE;
    if (M < N) {
        slice = (KVEC_A_SLICE / M) & ~(int64_t)3;
        slice = slice < KVEC_SLICE ? KVEC_SLICE : slice;
    }
    int64_t k1step = k->K1 > 1 ? (slice / K > 1 ? slice / K : 1) : 1;
    int64_t xstep = k->K1 > 1 ? K : slice;
    for (int64_t k1a = 0; k1a < k->K1; k1a += k1step)
        for (int64_t x0 = 0; x0 < K; x0 += xstep) {
            int64_t k1b = k1a + k1step < k->K1 ? k1a + k1step : k->K1;
            int64_t len = K - x0 < xstep ? K - x0 : xstep;
            int rem = (int)(len % 4), add = k1a > 0 || x0 > 0;
            __m256i mask = _mm256_setr_epi64x(rem > 0 ? -1 : 0,
                                              rem > 1 ? -1 : 0,
                                              rem > 2 ? -1 : 0, 0);
            /* The next slice's lines are prefetched while this one is
             * computed, a share of them per block: an operand from memory
             * stalled every slice, and prefetching them all at once
             * evicted the slice being computed (str_mps's 19 x 19 x (105
             * x 19), B from memory: docs/bench.md). */
            /* The next slice: rows [k1b, k1b + nk1) of a two-level K,
             * else the run of nlen from x0 + xstep (nk1 1, or 0: none). */
            int64_t nk1, nlen, offa, offb;
            if (k->K1 > 1) {
                nk1 = k->K1 - k1b < k1step ? k->K1 - k1b : k1step;
                nlen = len;
                offa = k1b * k->sak1;
                offb = k1b * k->sbk1;
            } else {
                offa = offb = x0 + xstep;
                nlen = K - offa < xstep ? K - offa : xstep;
                nlen = nlen > 0 ? nlen : 0;
                nk1 = nlen > 0;
            }
            int64_t nb = (M + 2) / 3 * ((N + 3) / 4);
            pf_cursor pa, pb;
            pf_start(&pa, a + offa, nk1, k->sak1, M, sam, nlen);
            pf_start(&pb, b + offb, nk1, k->sbk1, N, sbn, nlen);
            int64_t pera = nlen > 0 ? nk1 * M * (nlen / 8 + 2) / nb + 1 : 0;
            int64_t perb = nlen > 0 ? nk1 * N * (nlen / 8 + 2) / nb + 1 : 0;
            if (M < N)
                for (int64_t n = 0; n < N; n += 4) {
                    int nr = N - n < 4 ? (int)(N - n) : 4;
                    for (int64_t m = 0; m < M; m += 3) {
                        kvec_block(M - m < 3 ? (int)(M - m) : 3, nr, x0, len,
                                   k1a, k1b, a + m * sam, sam, b + n * sbn,
                                   sbn, k, c + m * scm + n * scn, scm, scn,
                                   mask, add);
                        if (pera) {
                            pf_next(&pa, pera);
                            pf_next(&pb, perb);
                        }
                    }
                }
            else
                for (int64_t m = 0; m < M; m += 3) {
                    int mr = M - m < 3 ? (int)(M - m) : 3;
                    for (int64_t n = 0; n < N; n += 4) {
                        kvec_block(mr, N - n < 4 ? (int)(N - n) : 4, x0, len,
                                   k1a, k1b, a + m * sam, sam, b + n * sbn,
                                   sbn, k, c + m * scm + n * scn, scm, scn,
                                   mask, add);
                        if (pera) {
                            pf_next(&pa, pera);
                            pf_next(&pb, perb);
                        }
                    }
                }
        }
}

/* Portable version: one dot product per element of C over the two-level
 * K. */
static void eb_kern_gemm_dots(int64_t M, int64_t N, int64_t K,
                              const double *a, int64_t sam, const double *b,
                              int64_t sbn, const eb_gemm_k *k, double *c,
                              int64_t scm, int64_t scn)
{
    for (int64_t m = 0; m < M; m++)
        for (int64_t n = 0; n < N; n++) {
            double s = 0;
            for (int64_t k1 = 0; k1 < k->K1; k1++)
                s += eb_kern_dot(K, a + m * sam + k1 * k->sak1, k->sak,
                                 b + n * sbn + k1 * k->sbk1, k->sbk);
            c[m * scm + n * scn] = s;
        }
}

/*
 * C = A B for a C of at most FEW_ROWS_MAX rows, row-major, and a B whose
 * columns are contiguous and that does not fit in the caches: each
 * element of B is used M times only, so the step is a stream of B. The
 * register-blocked row kernel walks B down strips of 12 to 36 columns,
 * one row of B every N elements: with N a power of two those rows fall
 * into the same cache sets and every line is fetched again (M = 4,
 * N = 8192, K = 256: 1.9 GFLOP/s, B at 2 GB/s). Here B is read in its
 * storage order instead, a chunk of FEW_ROWS_COLS columns of two rows at a
 * time, and the M x chunk block of C stays in L1, loaded and stored once
 * per two rows of B. Taken for M <= 6 (more rows spill registers), N >= 24
 * (narrower B's rows lie next to each other), a K of 32 or more (a short
 * K's strips stay in cache) and a B of 2^16 elements or more. Measured
 * (thread CPU time, 8 GEMMs from DRAM, B row-major, at a load of 4):
 * 4 x 8192 x 256 3.2-4.1 -> 10.0 GFLOP/s, 1 x 8192 x 256 1.5 -> 3.8,
 * 6 x 1000 x 1000 4.5-6.4 -> 14.1-14.7, 4 x 32 x 4000 12.9 -> 22.0;
 * 2 x 20 x 4000 17.7 -> 11.9 (hence N >= 24), 8 x 8192 x 256 6.4-7.3 ->
 * 4.0-5.3 (hence M <= 6).
 */
#ifndef FEW_ROWS_COLS
#define FEW_ROWS_COLS 512
#endif
enum { FEW_ROWS_MAX = EB_FEW_ROWS_MAX, FEW_ROWS_MIN_N = 24, FEW_ROWS_MIN_K = 32,
       FEW_ROWS_MIN_B = 1 << 16 };

/* Row k of A's rows (broadcast) times B's chunk row(s), into C's chunk:
 * nk (1 or 2) rows of B from b0 and b1, C overwritten when `first`; the
 * same columns of the rows at p0 and p1 are prefetched (p0 NULL: none). */
__attribute__((target("avx2,fma"), always_inline)) static inline void
few_rows_update(int64_t w, const double *a0, const double *a1, int64_t sam,
                const double *b0, const double *b1, const double *p0,
                const double *p1, double *c, int64_t scm, int first,
                __m256i mask, const int mr, const int nk)
{
    __m256d x0[FEW_ROWS_MAX], x1[FEW_ROWS_MAX];
    _Pragma("GCC unroll 8")
    for (int r = 0; r < mr; r++) {
        x0[r] = _mm256_broadcast_sd(a0 + r * sam);
        x1[r] = nk == 2 ? _mm256_broadcast_sd(a1 + r * sam)
                        : _mm256_setzero_pd();
    }
    int64_t j = 0;
    for (; j + 4 <= w; j += 4) {
        if (p0 && j % 8 == 0) {
            /* The next rows' line at this column: B's rows are far
             * apart, each chunk a short stream the hardware prefetcher
             * would only pick up after a few misses. */
            _mm_prefetch((const char *)(p0 + j), _MM_HINT_T0);
            if (nk == 2)
                _mm_prefetch((const char *)(p1 + j), _MM_HINT_T0);
        }
        __m256d v0 = _mm256_loadu_pd(b0 + j);
        __m256d v1 = nk == 2 ? _mm256_loadu_pd(b1 + j) : _mm256_setzero_pd();
        _Pragma("GCC unroll 8")
        for (int r = 0; r < mr; r++) {
            double *cp = c + r * scm + j;
            __m256d t = first ? _mm256_mul_pd(x0[r], v0)
                              : _mm256_fmadd_pd(x0[r], v0,
                                                _mm256_loadu_pd(cp));
            if (nk == 2)
                t = _mm256_fmadd_pd(x1[r], v1, t);
            _mm256_storeu_pd(cp, t);
        }
    }
    if (j < w) {
        __m256d v0 = _mm256_maskload_pd(b0 + j, mask);
        __m256d v1 = nk == 2 ? _mm256_maskload_pd(b1 + j, mask)
                             : _mm256_setzero_pd();
        _Pragma("GCC unroll 8")
        for (int r = 0; r < mr; r++) {
            double *cp = c + r * scm + j;
            __m256d t = first ? _mm256_mul_pd(x0[r], v0)
                              : _mm256_fmadd_pd(x0[r], v0,
                                                _mm256_maskload_pd(cp, mask));
            if (nk == 2)
                t = _mm256_fmadd_pd(x1[r], v1, t);
            _mm256_maskstore_pd(cp, mask, t);
        }
    }
}

__attribute__((target("avx2,fma"), always_inline)) static inline void
few_rows_chunk(int64_t w, const double *a, int64_t sam, const double *b,
               const eb_gemm_k *k, int64_t K, double *c, int64_t scm,
               const int mr)
{
    int64_t tail = w % 4;
    __m256i mask = _mm256_setr_epi64x(-1, tail > 1 ? -1 : 0,
                                      tail > 2 ? -1 : 0, 0);
    int first = 1;
    for (int64_t k1 = 0; k1 < k->K1; k1++) {
        const double *ak = a + k1 * k->sak1, *bk = b + k1 * k->sbk1;
        int64_t kk = 0;
        for (; kk + 2 <= K; kk += 2, first = 0) {
            /* Prefetch the next two rows (in this k1; the first rows of
             * the next k1 start cold). */
            const double *p0 = kk + 3 < K ? bk + (kk + 2) * k->sbk : NULL;
            few_rows_update(w, ak + kk * k->sak, ak + (kk + 1) * k->sak,
                            sam, bk + kk * k->sbk, bk + (kk + 1) * k->sbk,
                            p0, p0 ? p0 + k->sbk : NULL, c, scm, first,
                            mask, mr, 2);
        }
        if (kk < K) {
            few_rows_update(w, ak + kk * k->sak, NULL, sam,
                            bk + kk * k->sbk, NULL, NULL, NULL, c, scm, first,
                            mask, mr, 1);
            first = 0;
        }
    }
}

/* C row-major (scn = 1) is written in place; any other C chunk by chunk
 * through a row-major tile on the stack (M x FEW_ROWS_COLS elements
 * stored against M x FEW_ROWS_COLS x K multiply-adds). */
__attribute__((target("avx2,fma"))) static void
eb_kern_gemm_few_rows_avx2(int64_t M, int64_t N, int64_t K, const double *a,
                           int64_t sam, const double *b, const eb_gemm_k *k,
                           double *c, int64_t scm, int64_t scn)
{
    double tile[FEW_ROWS_MAX * FEW_ROWS_COLS];
    for (int64_t n0 = 0; n0 < N; n0 += FEW_ROWS_COLS) {
        int64_t w = N - n0 < FEW_ROWS_COLS ? N - n0 : FEW_ROWS_COLS;
        double *cc = scn == 1 ? c + n0 : tile;
        int64_t ldc = scn == 1 ? scm : w;
        switch (M) {
#define EB_FEW(MR) \
        case MR: few_rows_chunk(w, a, sam, b + n0, k, K, cc, ldc, MR); \
            break;
        EB_FEW(1) EB_FEW(2) EB_FEW(3) EB_FEW(4) EB_FEW(5)
        default: EB_FEW(6)
#undef EB_FEW
        }
        if (scn != 1)
            for (int64_t n = 0; n < w; n++)
                for (int64_t m = 0; m < M; m++)
                    c[m * scm + (n0 + n) * scn] = tile[m * w + n];
    }
}

/*
 * C = A B for at most FEW_ROWS_MAX rows of C, a B with contiguous columns
 * larger than the caches and a short K (K1 K <= FEW_K_MAX): 8 columns of
 * C at a time, every row of B's strip read once (one line each) and K
 * summed in registers (2 M accumulators). The chunked few-rows kernel
 * loads and stores its block of C for every two rows of B, and the row
 * kernel copies B's panels: for gm_queen's 81 x (3 x 19683 x 27) step
 * both ran at 11-12 GFLOP/s with B from memory. The K rows of B are K
 * streams one line apart per strip; each is prefetched FEW_K_PF elements
 * ahead. Where K is longer than FEW_K_SLICE and C's rows are contiguous,
 * the strips run over panels of FEW_K_COLS columns FEW_K_SLICE rows of B
 * at a time, each slice but the first adding to the accumulators it
 * loads back from C (the same sums in the same order): K streams of B at
 * once were more than the prefetchers follow (that step: 29-34 ms in all
 * against 21-25 with slices of 8 rows of 4096 columns; 512 columns
 * 25-26, slices of 4 or 16 27-32).
 */
enum { FEW_K_MAX = EB_FEW_K_MAX, FEW_K_PF = 128, FEW_K_SLICE = 8,
       FEW_K_COLS = 4096 };

int eb_kern_few_k_rows_max(void)
{
    return eb_gemm512_usable() ? EB_FEW_K512_ROWS : FEW_ROWS_MAX;
}

int eb_kern_small_gemm_few_k(int64_t M, int64_t N, int64_t KT, int64_t sbn)
{
    return sbn == 1 && M <= eb_kern_few_k_rows_max() && N >= FEW_ROWS_MIN_N &&
           KT <= FEW_K_MAX && KT * N >= FEW_ROWS_MIN_B;
}

__attribute__((target("avx2,fma"), always_inline)) static inline void
few_k_strip(int64_t j, int64_t left, const double *ap, const double *b,
            const int64_t *boff, int64_t t0, int64_t kt, double *c,
            int64_t scm, int64_t scn, const int mr, const int nv)
{
    __m256d acc[FEW_ROWS_MAX][2];
    _Pragma("GCC unroll 8")
    for (int r = 0; r < mr; r++) {
        if (t0 > 0) {
            acc[r][0] = _mm256_loadu_pd(c + r * scm + j);
            acc[r][1] = nv == 2 ? _mm256_loadu_pd(c + r * scm + j + 4)
                                : _mm256_setzero_pd();
        } else {
            acc[r][0] = _mm256_setzero_pd();
            acc[r][1] = _mm256_setzero_pd();
        }
    }
    int pf = left > FEW_K_PF;
    for (int64_t t = t0; t < kt; t++) {
        const double *br = b + boff[t] + j;
        if (pf)
            _mm_prefetch((const char *)(br + FEW_K_PF), _MM_HINT_T0);
        __m256d v0 = _mm256_loadu_pd(br);
        __m256d v1 = nv == 2 ? _mm256_loadu_pd(br + 4) : _mm256_setzero_pd();
        _Pragma("GCC unroll 8")
        for (int r = 0; r < mr; r++) {
            __m256d x = _mm256_broadcast_sd(ap + t * mr + r);
            acc[r][0] = _mm256_fmadd_pd(x, v0, acc[r][0]);
            if (nv == 2)
                acc[r][1] = _mm256_fmadd_pd(x, v1, acc[r][1]);
        }
    }
    _Pragma("GCC unroll 8")
    for (int r = 0; r < mr; r++) {
        if (scn == 1) {
            _mm256_storeu_pd(c + r * scm + j, acc[r][0]);
            if (nv == 2)
                _mm256_storeu_pd(c + r * scm + j + 4, acc[r][1]);
        } else {
            double v[8];
            _mm256_storeu_pd(v, acc[r][0]);
            _mm256_storeu_pd(v + 4, acc[r][1]);
            for (int q = 0; q < 4 * nv; q++)
                c[r * scm + (j + q) * scn] = v[q];
        }
    }
}

__attribute__((target("avx2,fma"), always_inline)) static inline void
few_k_rows(int64_t N, const double *ap, const double *b, const int64_t *boff,
           int64_t kt, double *c, int64_t scm, int64_t scn, const int mr)
{
    int64_t j = 0;
    if (scn == 1 && kt > FEW_K_SLICE) {
        /* Panels of FEW_K_COLS columns (whole strips), FEW_K_SLICE rows
         * of B at a time, each slice adding to the panel of C it left in
         * the caches. */
        while (j + 8 <= N) {
            int64_t je = N - j < FEW_K_COLS ? j + (N - j) / 8 * 8
                                            : j + FEW_K_COLS;
            for (int64_t t0 = 0; t0 < kt; t0 += FEW_K_SLICE) {
                int64_t te = kt - t0 < FEW_K_SLICE ? kt : t0 + FEW_K_SLICE;
                for (int64_t s = j; s < je; s += 8)
                    few_k_strip(s, je - s, ap, b, boff, t0, te, c, scm, scn,
                                mr, 2);
            }
            j = je;
        }
    } else {
        for (; j + 8 <= N; j += 8)
            few_k_strip(j, N - j, ap, b, boff, 0, kt, c, scm, scn, mr, 2);
    }
    if (j + 4 <= N) {
        few_k_strip(j, 0, ap, b, boff, 0, kt, c, scm, scn, mr, 1);
        j += 4;
    }
    for (; j < N; j++)
        for (int r = 0; r < mr; r++) {
            double s = 0;
            for (int64_t t = 0; t < kt; t++)
                s += ap[t * mr + r] * b[boff[t] + j];
            c[r * scm + j * scn] = s;
        }
}

__attribute__((target("avx2,fma"))) static void
eb_kern_gemm_few_k_avx2(int64_t M, int64_t N, int64_t K, const double *a,
                        int64_t sam, const double *b, const eb_gemm_k *k,
                        double *c, int64_t scm, int64_t scn)
{
    int64_t boff[FEW_K_MAX];
    double ap[FEW_K_MAX * FEW_ROWS_MAX];
    int64_t kt = k->K1 * K;
    eb_gemm_few_k_pack(M, K, a, sam, k, boff, ap);
    switch (M) {
#define EB_FEWK(MR) \
    case MR: few_k_rows(N, ap, b, boff, kt, c, scm, scn, MR); break;
    EB_FEWK(1) EB_FEWK(2) EB_FEWK(3) EB_FEWK(4) EB_FEWK(5)
    default: EB_FEWK(6)
#undef EB_FEWK
    }
}

/* Does eb_kern_small_gemm take the k-vector kernel (C row-major)? */
static int kvec_shape(int64_t M, int64_t N, int64_t K, const eb_gemm_k *k,
                      int64_t sbn)
{
    return k->sak == 1 && k->sbk == 1 && sbn != 1 && K >= KVEC_MIN_K &&
           k->K1 * K >= KVEC_MIN_TOTAL &&
           (M <= KVEC_MAX_SIDE || N <= KVEC_MAX_SIDE);
}

void eb_kern_small_gemm(int64_t M, int64_t N, int64_t K, const double *a,
                     int64_t sam, const double *b, int64_t sbn,
                     const eb_gemm_k *k, double *c, int64_t scm, int64_t scn)
{
    if (sbn == 1 && M > FEW_ROWS_MAX && M <= EB_FEW_K512_ROWS &&
        N >= FEW_ROWS_MIN_N && k->K1 * K * N >= FEW_ROWS_MIN_B &&
        k->K1 * K <= FEW_K_MAX && eb_gemm512_usable()) {
        /* The few-K kernel's 2 M accumulators fit AVX-512's registers
         * for up to 12 rows (gm_queen's eager 243 x (9 x 19683 x 27),
         * B from memory, scratch program: 62-65 ms in the row kernel,
         * 40-44 so). */
        eb_kern_gemm_few_k_avx512(M, N, K, a, sam, b, k, c, scm, scn);
        return;
    }
    if (sbn == 1 && M <= FEW_ROWS_MAX && N >= FEW_ROWS_MIN_N &&
        k->K1 * K * N >= FEW_ROWS_MIN_B &&
        __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
        /* Few rows of C against a large B with contiguous columns, C
         * stored either way: B streamed in storage order, all of a short
         * K in registers (one test more per call would show in the
         * callgrind windows of lm's thousands of tiny GEMMs). */
        if (k->K1 * K <= FEW_K_MAX) {
            eb_kern_gemm_few_k_avx2(M, N, K, a, sam, b, k, c, scm, scn);
            return;
        }
        if (k->K1 * K >= FEW_ROWS_MIN_K) {
            eb_kern_gemm_few_rows_avx2(M, N, K, a, sam, b, k, c, scm, scn);
            return;
        }
    }
    if (scn != 1 && scm == 1) {
        /* Column-major C: compute C^T = B^T A^T, whose rows are C's
         * contiguous columns. */
        eb_gemm_k t = {k->K1, k->sbk1, k->sbk, k->sak1, k->sak};
        eb_kern_small_gemm(N, M, K, b, sbn, a, sam, &t, c, scn, scm);
        return;
    }
    if (!(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))) {
        eb_kern_gemm_dots(M, N, K, a, sam, b, sbn, k, c, scm, scn);
        return;
    }
    if (kvec_shape(M, N, K, k, sbn)) {
        eb_kern_gemm_kvec_avx2(M, N, K, a, sam, b, sbn, k, c, scm, scn);
        return;
    }
    int wide = eb_gemm512_usable();
    if (scn == 1) {
        if (wide)
            eb_kern_gemm_rowc_avx512(M, N, K, a, sam, b, sbn, k, c, scm);
        else
            eb_kern_gemm_rowc_avx2(M, N, K, a, sam, b, sbn, k, c, scm);
        return;
    }
    /* C strided both ways: blocks of rows (by column chunks of at most
     * SMALL_TILE_COLS where N is larger than a tile) into a compact tile
     * on the stack, then scattered. A C of more than SMALL_TILE columns
     * went through one scalar dot product per element: 4 x 524288 x 4
     * with C's rows 2 apart and columns 8 apart took 84-90 ms, in tiles
     * 13-17 ms (docs/bench.md, "Final measurements, third round"). */
    double tile[SMALL_TILE];
    int64_t nw = N <= SMALL_TILE ? N : SMALL_TILE_COLS;
    int64_t rows = SMALL_TILE / nw;
    for (int64_t n0 = 0; n0 < N; n0 += nw) {
        int64_t nc = N - n0 < nw ? N - n0 : nw;
        for (int64_t m0 = 0; m0 < M; m0 += rows) {
            int64_t mc = M - m0 < rows ? M - m0 : rows;
            if (wide)
                eb_kern_gemm_rowc_avx512(mc, nc, K, a + m0 * sam, sam,
                                         b + n0 * sbn, sbn, k, tile, nc);
            else
                eb_kern_gemm_rowc_avx2(mc, nc, K, a + m0 * sam, sam,
                                       b + n0 * sbn, sbn, k, tile, nc);
            for (int64_t m = 0; m < mc; m++)
                for (int64_t n = 0; n < nc; n++)
                    c[(m0 + m) * scm + (n0 + n) * scn] = tile[m * nc + n];
        }
    }
}

/* Does eb_kern_small_gemm stream B through a few-rows or few-K kernel
 * (its first two tests)? */
static int few_rows_taken(int64_t M, int64_t N, int64_t KT, int64_t sbn)
{
    if (sbn != 1 || N < FEW_ROWS_MIN_N || KT * N < FEW_ROWS_MIN_B)
        return 0;
    if (M > FEW_ROWS_MAX)
        return M <= EB_FEW_K512_ROWS && KT <= FEW_K_MAX &&
               eb_gemm512_usable();
    return KT <= FEW_K_MAX || KT >= FEW_ROWS_MIN_K;
}

/*
 * The shapes where eb_kern_small_gemm goes to one chunk of one slice of
 * its row kernel, C row-major or, through C^T = B^T A^T, column-major:
 * 1900 batch elements of 4 x 4 x 4 cost 37 ns an element in calls of the
 * AVX-512 kernel, most of it set-up (docs/engine-gemm.md). Not where
 * eb_kern_small_gemm streams a large B through its few-rows kernels: C^T's
 * row kernel would read B^T's rows down K at B's row stride, one stream
 * per k (tensornetwork's last step, 8 x (4 x 8192 x 256) with C
 * column-major: 14.1-14.7 ms so, 4.1-5.4 per element).
 */
int eb_kern_small_gemm_batch_form(int64_t M, int64_t N, int64_t K,
                                  const eb_gemm_k *k, int64_t sam,
                                  int64_t sbn, int64_t scm, int64_t scn)
{
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma"))
        return 0;
    int wide = eb_gemm512_usable();
    int64_t KT = k->K1 * K;
    eb_gemm_k t = {k->K1, k->sbk1, k->sbk, k->sak1, k->sak};
    if (scn == 1 && !kvec_shape(M, N, K, k, sbn) &&
        (wide ? eb_gemm512_one_panel(N, KT) : one_panel_avx2(N, KT)))
        return 1;
    if (scn != 1 && scm == 1 && !kvec_shape(N, M, K, &t, sam) &&
        !few_rows_taken(M, N, KT, sbn) &&
        (wide ? eb_gemm512_one_panel(M, KT) : one_panel_avx2(M, KT)))
        return 2;
    return 0;
}

void eb_kern_small_gemm_batch(int64_t W, int64_t M, int64_t N, int64_t K,
                              const double *a, int64_t sam, int64_t saw,
                              const double *b, int64_t sbn, int64_t sbw,
                              const eb_gemm_k *k, double *c, int64_t scm,
                              int64_t scn, int64_t scw)
{
    int form = W > 1 ? eb_kern_small_gemm_batch_form(M, N, K, k, sam, sbn,
                                                     scm, scn)
                     : 0;
    if (form) {
        int wide = eb_gemm512_usable();
        eb_gemm_k t = {k->K1, k->sbk1, k->sbk, k->sak1, k->sak};
        if (form == 1)
            (wide ? eb_kern_gemm_batch_avx512 : eb_kern_gemm_batch_avx2)(
                W, M, N, K, a, sam, saw, b, sbn, sbw, k, c, scm, scw);
        else
            (wide ? eb_kern_gemm_batch_avx512 : eb_kern_gemm_batch_avx2)(
                W, N, M, K, b, sbn, sbw, a, sam, saw, &t, c, scn, scw);
        return;
    }
    for (int64_t w = 0; w < W; w++)
        eb_kern_small_gemm(M, N, K, a + w * saw, sam, b + w * sbw, sbn, k,
                           c + w * scw, scm, scn);
}


/* Batch elements per transposed pack of eb_kern_gemm_wrows. */
#ifndef WROWS_SUB
#define WROWS_SUB 128
#endif
enum { WROWS_PACK = 8192 };

/* pack[w][i] = A's row i (the block's mr K runs, rows[i]) at w, for w <
 * wn: 4 x 4 transposes where 4 runs and 4 elements are whole. */
__attribute__((target("avx2"), always_inline)) static inline void
wrows_pack(const double *const *rows, int64_t R, int64_t wn, double *pack)
{
    int64_t i = 0, w4 = wn / 4 * 4;
    for (; i + 4 <= R; i += 4) {
        int64_t w = 0;
        for (; w < w4; w += 4) {
            __m256d r[4];
            _Pragma("GCC unroll 4")
            for (int t = 0; t < 4; t++)
                r[t] = _mm256_loadu_pd(rows[i + t] + w);
            eb_transpose4(r);
            _Pragma("GCC unroll 4")
            for (int t = 0; t < 4; t++)
                _mm256_storeu_pd(pack + (w + t) * R + i, r[t]);
        }
        for (; w < wn; w++)
            for (int t = 0; t < 4; t++)
                pack[w * R + i + t] = rows[i + t][w];
    }
    for (; i < R; i++)
        for (int64_t w = 0; w < wn; w++)
            pack[w * R + i] = rows[i][w];
}

/* Blocks of rows of C, each over the W batch elements in turn, WROWS_SUB
 * at a time: the block's mr K runs of A are moved into a pack with the
 * rows of each batch element contiguous (read in place, each element's
 * mr K broadcasts came from as many pages: lm's 1100 x (144 x 12 x 12)
 * ran at under one instruction per two cycles), the next ones prefetched
 * meanwhile; each row of C is written as W runs of N, B's W matrices are
 * read once per block from cache. */
__attribute__((target("avx2,fma"))) static void
eb_kern_gemm_wrows_avx2(int64_t M, int64_t N, int64_t K, int64_t W,
                        const double *a, int64_t sam, int64_t sak,
                        const double *b, int64_t sbk, int64_t sbw, double *c,
                        int64_t scm, int64_t scw)
{
    int nv = N < 4 ? 1 : (int)((N + 3) / 4), mrow = block_rows(nv);
    int64_t tail = N < 4 ? 0 : N - 4;
    __m256i mask = _mm256_setr_epi64x(-1, N > 1 ? -1 : 0, N > 2 ? -1 : 0,
                                      N > 3 ? -1 : 0);
    double pack[WROWS_PACK];
    const double *rows[4 * EB_WROWS_MAX_K];
    for (int64_t m = 0; m < M; m += mrow) {
        int mr = M - m < mrow ? (int)(M - m) : mrow;
        int64_t R = mr * K, sub = WROWS_PACK / R / 4 * 4;
        sub = sub < 4 ? 4 : sub > WROWS_SUB ? WROWS_SUB : sub;
        for (int r = 0; r < mr; r++)
            for (int64_t k = 0; k < K; k++)
                rows[r * K + k] = a + (m + r) * sam + k * sak;
        for (int64_t w0 = 0; w0 < W; w0 += sub) {
            int64_t wn = W - w0 < sub ? W - w0 : sub;
            if (w0 + sub < W)
                for (int64_t i = 0; i < R; i++)
                    prefetch_lines(rows[i] + sub, sub);
            wrows_pack(rows, R, wn, pack);
            for (int64_t i = 0; i < R; i++)
                rows[i] += wn;
            for (int64_t w = 0; w < wn; w++) {
                const double *ar = pack + w * R, *bw = b + (w0 + w) * sbw;
                double *cr = c + m * scm + (w0 + w) * scw;
                gemm_block_any(K, ar, K, 1, NULL, bw, sbk, NULL, cr, scm, tail,
                               mask, 0, mr, nv, N < 4, 0);
            }
        }
    }
}

void eb_kern_gemm_wrows(int64_t M, int64_t N, int64_t K, int64_t W,
                        const double *a, int64_t sam, int64_t sak,
                        const double *b, int64_t sbk, int64_t sbw, double *c,
                        int64_t scm, int64_t scw)
{
    if (N <= EB_WROWS_MAX_N && __builtin_cpu_supports("avx2") &&
        __builtin_cpu_supports("fma")) {
        eb_kern_gemm_wrows_avx2(M, N, K, W, a, sam, sak, b, sbk, sbw, c, scm,
                                scw);
        return;
    }
    for (int64_t m = 0; m < M; m++)
        for (int64_t w = 0; w < W; w++)
            for (int64_t n = 0; n < N; n++) {
                double s = 0;
                for (int64_t k = 0; k < K; k++)
                    s += a[m * sam + k * sak + w] * b[k * sbk + w * sbw + n];
                c[m * scm + w * scw + n] = s;
            }
}

/* One block of C for the vector-batch GEMM on packed rows: mb (1..3) rows
 * m by nn (1..4) columns n, for one vector of 4 elements of w, summed over
 * K in twelve registers at most. Row k of A's row i is at pa[i] + 8 k, of
 * B's column j at pb[j] + ldb k: each load feeds 3 or 4 multiply-adds, so
 * the packed block is read from L2 at the rate the FMA units use it. The
 * three rows of A are loaded first and B's columns one at a time: twelve
 * sums, three rows and one column fill the 16 vector registers (loading
 * B's four columns first needed 17, and gcc reloaded one of them from
 * memory for every row, 9 loads per k instead of 7).
 * With tr set (nn 4, the four columns one after another in C, w not), a
 * row's four vectors along w are transposed in registers into four
 * vectors along n and C is loaded and stored by those: 4 vector moves
 * instead of 16 scalar ones through the stack, which on short K (16)
 * cost as much as the multiply-adds. */
__attribute__((target("avx2,fma"), always_inline)) static inline void
eb_kern_vec_block_avx2(int64_t K, const double *const *pa,
                       const double *const *pb, int64_t ldb, double *c,
                       const int64_t *cm, const int64_t *cn, int64_t scw,
                       int add, int tr, const int mb, const int nn)
{
    __m256d acc[3][4];
    _Pragma("GCC unroll 3")
    for (int i = 0; i < mb; i++) {
        if (nn == 4 && tr) {
            _Pragma("GCC unroll 4")
            for (int x = 0; x < 4; x++)
                acc[i][x] = add ? _mm256_loadu_pd(c + cm[i] + cn[0] + x * scw)
                                : _mm256_setzero_pd();
            if (add)
                eb_transpose4(acc[i]);
            continue;
        }
        _Pragma("GCC unroll 4")
        for (int j = 0; j < nn; j++) {
            const double *o = c + cm[i] + cn[j];
            acc[i][j] = !add ? _mm256_setzero_pd()
                        : scw == 1 ? _mm256_loadu_pd(o)
                        : _mm256_setr_pd(o[0], o[scw], o[2 * scw], o[3 * scw]);
        }
    }
    for (int64_t k = 0; k < K; k++) {
        __m256d av[3];
        _Pragma("GCC unroll 3")
        for (int i = 0; i < mb; i++)
            av[i] = _mm256_loadu_pd(pa[i] + 8 * k);
        _Pragma("GCC unroll 4")
        for (int j = 0; j < nn; j++) {
            __m256d bv = _mm256_loadu_pd(pb[j] + ldb * k);
            _Pragma("GCC unroll 3")
            for (int i = 0; i < mb; i++)
                acc[i][j] = _mm256_fmadd_pd(av[i], bv, acc[i][j]);
        }
    }
    _Pragma("GCC unroll 3")
    for (int i = 0; i < mb; i++) {
        if (nn == 4 && tr) {
            eb_transpose4(acc[i]);
            _Pragma("GCC unroll 4")
            for (int x = 0; x < 4; x++)
                _mm256_storeu_pd(c + cm[i] + cn[0] + x * scw, acc[i][x]);
            continue;
        }
        _Pragma("GCC unroll 4")
        for (int j = 0; j < nn; j++) {
            double *o = c + cm[i] + cn[j];
            if (scw == 1) {
                _mm256_storeu_pd(o, acc[i][j]);
            } else {
                double t[4];
                _mm256_storeu_pd(t, acc[i][j]);
                for (int x = 0; x < 4; x++)
                    o[x * scw] = t[x];
            }
        }
    }
}

/* One mb x nn block of C at rows m, columns n of chunk w8 (both vectors
 * of the chunk). */
__attribute__((target("avx2,fma"), always_inline)) static inline void
vec_tile(int64_t wb, int64_t w8, int64_t M, int64_t N, int64_t K,
         int64_t k0, int64_t kk, int64_t m, int64_t n, const double *pac,
         const double *pbc, double *c, const int64_t *cm, const int64_t *cn,
         int64_t scw)
{
    int nn = N - n < 4 ? (int)(N - n) : 4;
    int mb = M - m < 3 ? (int)(M - m) : 3;
    int tr = nn == 4 && scw != 1 && cn[n + 1] == cn[n] + 1 &&
             cn[n + 2] == cn[n] + 2 && cn[n + 3] == cn[n] + 3;
    for (int64_t h = 0; h < 8 && w8 + h + 4 <= wb; h += 4) {
        const double *pai[3], *pbj[4];
        for (int i = 0; i < mb; i++)
            pai[i] = pac + ((m + i) * K + k0) * 8 + h;
        for (int j = 0; j < nn; j++)
            pbj[j] = pbc + (k0 * N + n + j) * 8 + h;
        double *cw = c + (w8 + h) * scw;
        int add = k0 > 0;
#define EB_VEC_BLOCK(MB, NN) \
    eb_kern_vec_block_avx2(kk, pai, pbj, 8 * N, cw, cm + m, cn + n, scw, add, \
                           tr, MB, NN)
#define EB_VEC_ROW(MB) \
    switch (nn) { \
    case 4: EB_VEC_BLOCK(MB, 4); break; \
    case 3: EB_VEC_BLOCK(MB, 3); break; \
    case 2: EB_VEC_BLOCK(MB, 2); break; \
    default: EB_VEC_BLOCK(MB, 1); break; \
    }
        if (mb == 3) {
            EB_VEC_ROW(3)
        } else if (mb == 2) {
            EB_VEC_ROW(2)
        } else {
            EB_VEC_ROW(1)
        }
#undef EB_VEC_ROW
#undef EB_VEC_BLOCK
    }
}

/* C for one packed block of wb elements of w, chunk by
 * chunk of 8 elements: a chunk's rows of A and B (64 bytes each) lie one
 * after another, without the cache-set conflicts of rows a power of two
 * apart. K is cut into slices of VEC_KSLICE so that the rows one block of
 * C reads (3 of A, 4 of B) stay in L1 for both vectors of the chunk;
 * slices after the first add to C. Where the chunk's slice of B fits in
 * VEC_B_L1 bytes the blocks walk C's rows outer (B stays in L1, A's pack
 * is read once and each row of C is written whole in turn); otherwise its
 * columns outer. Columns outer, lm's 1100 x (144 x 12 x 12) wrote each
 * line of C in three visits from L2 and read A's 110 KiB chunk three
 * times (docs/bench.md). */
enum { VEC_B_L1 = 16384 };

__attribute__((target("avx2,fma"))) static void
eb_kern_vec_packed_avx2(int64_t wb, int64_t M, int64_t N, int64_t K, const double *pa,
                        const double *pb, double *c, const int64_t *cm,
                        const int64_t *cn, int64_t scw)
{
    for (int64_t w8 = 0; w8 + 4 <= wb; w8 += 8) {
        const double *pac = pa + w8 * M * K;
        const double *pbc = pb + w8 * K * N;
        for (int64_t k0 = 0; k0 < K; k0 += VEC_KSLICE) {
            int64_t kk = K - k0 < VEC_KSLICE ? K - k0 : VEC_KSLICE;
            if (kk * N * 64 <= VEC_B_L1)
                for (int64_t m = 0; m < M; m += 3)
                    for (int64_t n = 0; n < N; n += 4)
                        vec_tile(wb, w8, M, N, K, k0, kk, m, n, pac, pbc, c,
                                 cm, cn, scw);
            else
                for (int64_t n = 0; n < N; n += 4)
                    for (int64_t m = 0; m < M; m += 3)
                        vec_tile(wb, w8, M, N, K, k0, kk, m, n, pac, pbc, c,
                                 cm, cn, scw);
        }
    }
}

/* Four rows of a strided pack whose elements lie one after another (a
 * short innermost dim inside w, say lm's F of 4 in hmf0F): four loads of
 * 4 adjacent elements, one per element of w, transposed in registers into
 * 4 elements of w for each row; the rows are `step` apart in the pack. On
 * this machine's cores a 4-element gather costs several times the loads
 * and shuffles it replaces (the strided pack of lm's 16^3 steps:
 * docs/bench.md, "lm eager, fourth round"). */
__attribute__((target("avx2"), always_inline)) static inline void
vec_pack_quad(const double *s, int64_t full, int64_t wb, int64_t sw,
              int64_t rows, int64_t step, double *d)
{
    for (int64_t x = 0; x < full; x += 4) {
        __m256d r[4];
        _Pragma("GCC unroll 4")
        for (int t = 0; t < 4; t++)
            r[t] = _mm256_loadu_pd(s + (x + t) * sw);
        eb_transpose4(r);
        double *o = d + x / 8 * 8 * rows + x % 8;
        _Pragma("GCC unroll 4")
        for (int t = 0; t < 4; t++)
            _mm256_storeu_pd(o + step * t, r[t]);
    }
    for (int64_t x = full; x < wb; x++)
        for (int t = 0; t < 4; t++)
            d[full * rows + step * t + x - full] = s[x * sw + t];
}

/* Are the offsets o[q .. q + 3] (q + 3 < n) one after another? */
static int vec_quad(const int64_t *o, int64_t q, int64_t n)
{
    return q + 3 < n && o[q + 1] == o[q] + 1 && o[q + 2] == o[q] + 2 &&
           o[q + 3] == o[q] + 3;
}

/* eb_kern_vec_pack with w strided (sw > 1): four rows at a time where
 * their elements are adjacent (vec_pack_quad; four rows i, as for a
 * short inner dim of m in A or of k in B, or four rows j), else gathers
 * of 4 elements. */
__attribute__((target("avx2"))) static void
eb_kern_vec_pack_strided_avx2(int64_t i0, int64_t i1, int64_t nj,
                              const double *src, const int64_t *oi,
                              const int64_t *oj, int64_t wb, int64_t sw,
                              int64_t rows, double *dst)
{
    int64_t full = wb / 8 * 8;
    __m256i idx = _mm256_setr_epi64x(0, sw, 2 * sw, 3 * sw);
    for (int64_t i = i0; i < i1; i++) {
        if (sw >= 4 && vec_quad(oi, i, i1)) {
            for (int64_t j = 0; j < nj; j++)
                vec_pack_quad(src + oi[i] + oj[j], full, wb, sw, rows,
                              8 * nj, dst + (i * nj + j) * 8);
            i += 3;
            continue;
        }
        for (int64_t j = 0; j < nj; j++) {
            const double *s = src + oi[i] + oj[j];
            double *d = dst + (i * nj + j) * 8;
            if (sw >= 4 && vec_quad(oj, j, nj)) {
                vec_pack_quad(s, full, wb, sw, rows, 8, d);
                j += 3;
                continue;
            }
            for (int64_t x = 0; x < full; x += 8) {
                _mm256_storeu_pd(d + x * rows,
                                 _mm256_i64gather_pd(s + x * sw, idx, 8));
                _mm256_storeu_pd(d + x * rows + 4,
                                 _mm256_i64gather_pd(s + (x + 4) * sw, idx, 8));
            }
            for (int64_t x = full; x < wb; x++)
                d[full * rows + x - full] = s[x * sw];
        }
    }
}

__attribute__((target("avx2"))) static void
eb_kern_vec_pack_avx2(int64_t i0, int64_t i1, int64_t nj, const double *src,
                      const int64_t *oi, const int64_t *oj, int64_t wb,
                      int64_t rows, double *dst)
{
    int64_t full = wb / 8 * 8;
    for (int64_t i = i0; i < i1; i++)
        for (int64_t j = 0; j < nj; j++) {
            const double *s = src + oi[i] + oj[j];
            /* The rows are short runs far apart, which the hardware
             * prefetcher does not follow: fetch the row VEC_PREFETCH rows
             * ahead now, so that its misses overlap this row's copy. */
            int64_t pi = i, pj = j + VEC_PREFETCH;
            while (pj >= nj) {
                pj -= nj;
                pi++;
            }
            if (pi < i1) {
                const char *q = (const char *)(src + oi[pi] + oj[pj]);
                for (int64_t x = 0; x < wb; x += 8)
                    _mm_prefetch(q + 8 * x, _MM_HINT_T0);
            }
            double *d = dst + (i * nj + j) * 8;
            for (int64_t x = 0; x < full; x += 8) {
                _mm256_storeu_pd(d + x * rows, _mm256_loadu_pd(s + x));
                _mm256_storeu_pd(d + x * rows + 4, _mm256_loadu_pd(s + x + 4));
            }
            for (int64_t x = full; x < wb; x++)
                d[full * rows + x - full] = s[x];
        }
}

void eb_kern_vec_pack(int64_t i0, int64_t i1, int64_t nj, const double *src,
                      const int64_t *oi, const int64_t *oj, int64_t wb,
                      int64_t sw, int64_t rows, double *dst)
{
    if (__builtin_cpu_supports("avx2")) {
        if (sw == 1)
            eb_kern_vec_pack_avx2(i0, i1, nj, src, oi, oj, wb, rows, dst);
        else
            eb_kern_vec_pack_strided_avx2(i0, i1, nj, src, oi, oj, wb, sw,
                                          rows, dst);
        return;
    }
    for (int64_t i = i0; i < i1; i++)
        for (int64_t j = 0; j < nj; j++) {
            const double *s = src + oi[i] + oj[j];
            double *d = dst + (i * nj + j) * 8;
            for (int64_t x = 0; x < wb; x++)
                d[x / 8 * 8 * rows + x % 8] = s[x * sw];
        }
}

void eb_kern_vec_gemm(int64_t wb, int64_t M, int64_t N, int64_t K, const double *pa, const double *pb,
                      double *c, const int64_t *cm, const int64_t *cn,
                      int64_t scw)
{
    int64_t w = 0;
    if (eb_gemm512_usable()) {
        eb_kern_vec_packed_avx512(wb, M, N, K, pa, pb, c, cm, cn, scw);
        return;
    }
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
        eb_kern_vec_packed_avx2(wb, M, N, K, pa, pb, c, cm, cn, scw);
        w = wb / 4 * 4;
    }
    for (; w < wb; w++) {
        const double *pac = pa + w / 8 * 8 * M * K + w % 8;
        const double *pbc = pb + w / 8 * 8 * K * N + w % 8;
        for (int64_t m = 0; m < M; m++)
            for (int64_t n = 0; n < N; n++) {
                double s = 0;
                for (int64_t k = 0; k < K; k++)
                    s += pac[(m * K + k) * 8] * pbc[(k * N + n) * 8];
                c[cm[m] + cn[n] + w * scw] = s;
            }
    }
}

/* Columns j0 .. j0 + nj - 1 (nj <= 4) of C over the n <= 8 elements of w
 * from x: their sums over all of K kept in registers, two vectors of w per
 * column (every element the same chain of multiply-adds, k ascending,
 * wherever it falls: lanes past n are masked off, neither read nor
 * written), then stored as rows of four transposed in registers (four
 * columns one after another in C), as vectors (w innermost in C) or lane
 * by lane. Inlined with constant nj and whole (n = 8), so that the sums
 * stay in registers. */
__attribute__((target("avx2,fma"), always_inline)) static inline void
vec_gemv_sums(int64_t n, const int nj, const int whole, int64_t K,
              const double *s, int64_t sr, const double *const *gr,
              const int64_t *gk, double *c, const int64_t *cj, int64_t scw,
              int four)
{
    __m256i m0 = _mm256_setr_epi64x(n > 0 ? -1 : 0, n > 1 ? -1 : 0,
                                    n > 2 ? -1 : 0, n > 3 ? -1 : 0);
    __m256i m1 = _mm256_setr_epi64x(n > 4 ? -1 : 0, n > 5 ? -1 : 0,
                                    n > 6 ? -1 : 0, n > 7 ? -1 : 0);
    __m256d a[4][2];
    _Pragma("GCC unroll 4")
    for (int t = 0; t < nj; t++)
        a[t][0] = a[t][1] = _mm256_setzero_pd();
    for (int64_t k = 0; k < K; k++) {
        const double *sk = s + k * sr;
        __m256d s0 = whole ? _mm256_loadu_pd(sk) : _mm256_maskload_pd(sk, m0);
        __m256d s1 =
            whole ? _mm256_loadu_pd(sk + 4) : _mm256_maskload_pd(sk + 4, m1);
        _Pragma("GCC unroll 4")
        for (int t = 0; t < nj; t++) {
            const double *g = gr[t] + gk[k];
            __m256d g0 = whole ? _mm256_loadu_pd(g) : _mm256_maskload_pd(g, m0);
            __m256d g1 =
                whole ? _mm256_loadu_pd(g + 4) : _mm256_maskload_pd(g + 4, m1);
            a[t][0] = _mm256_fmadd_pd(s0, g0, a[t][0]);
            a[t][1] = _mm256_fmadd_pd(s1, g1, a[t][1]);
        }
    }
    if (nj == 4 && four && whole) {
        _Pragma("GCC unroll 2")
        for (int h = 0; h < 2; h++) {
            __m256d r[4] = {a[0][h], a[1][h], a[2][h], a[3][h]};
            eb_transpose4(r);
            double *cw = c + 4 * h * scw + cj[0];
            _Pragma("GCC unroll 4")
            for (int x = 0; x < 4; x++)
                _mm256_storeu_pd(cw + x * scw, r[x]);
        }
        return;
    }
    _Pragma("GCC unroll 4")
    for (int t = 0; t < nj; t++) {
        double *ct = c + cj[t];
        if (scw == 1) {
            _mm256_maskstore_pd(ct, m0, a[t][0]);
            _mm256_maskstore_pd(ct + 4, m1, a[t][1]);
            continue;
        }
        double v[8];
        _mm256_storeu_pd(v, a[t][0]);
        _mm256_storeu_pd(v + 4, a[t][1]);
        for (int64_t x = 0; x < n; x++)
            ct[x * scw] = v[x];
    }
}

/* Columns j0 .. j0 + nj - 1 of C over the ns elements of w of a span:
 * vec_gemv_sums chunk by chunk of 8 elements of w, the last one masked. */
__attribute__((target("avx2,fma"))) static void
vec_gemv_cols_avx2(int64_t ns, int nj, int64_t K, const double *s,
                   int64_t sr, const double *const *gr, const int64_t *gk,
                   double *c, const int64_t *cj, int64_t scw, int four)
{
    for (int64_t x = 0; x < ns; x += 8) {
        int64_t n = ns - x < 8 ? ns - x : 8;
        const double *gx[4] = {NULL, NULL, NULL, NULL};
        for (int t = 0; t < nj; t++)
            gx[t] = gr[t] + x;
        double *cx = c + x * scw;
#define EB_GEMV_SUMS(NJ) \
    (n == 8 ? vec_gemv_sums(8, NJ, 1, K, s + x, sr, gx, gk, cx, cj, scw, four) \
            : vec_gemv_sums(n, NJ, 0, K, s + x, sr, gx, gk, cx, cj, scw, four))
        switch (nj) {
        case 4: EB_GEMV_SUMS(4); break;
        case 3: EB_GEMV_SUMS(3); break;
        case 2: EB_GEMV_SUMS(2); break;
        default: EB_GEMV_SUMS(1); break;
        }
#undef EB_GEMV_SUMS
    }
}

/* sp[q spw + x] = s[sk[q] + x ssw] for x < ns, k0 <= q < K: one pass
 * along s (x outer), not one per row q. */
static void vec_gemv_pack_s(int64_t ns, int64_t k0, int64_t K,
                            const double *s, const int64_t *sk, int64_t ssw,
                            double *sp, int64_t spw)
{
    for (int64_t x = 0; x < ns && k0 < K; x++)
        for (int64_t q = k0; q < K; q++)
            sp[q * spw + x] = s[sk[q] + x * ssw];
}

/* vec_gemv_pack_s from k0 = 0, the k of each group of 4 contiguous in s
 * (sk[k + i] = sk[k] + i) moved by 4 x 4 transposes of rows of s, the
 * rest as scalars (lm's 1996 x (1 x 16 x 7) vector-batch GEMVs read s as
 * 1996 rows of 7: element by element, each store to another line, the
 * copy took about 30% of those steps' samples). */
__attribute__((target("avx2"))) static void
vec_gemv_pack_s_avx2(int64_t ns, int64_t K, const double *s,
                     const int64_t *sk, int64_t ssw, double *sp, int64_t spw)
{
    int64_t x4 = ns / 4 * 4, k = 0;
    for (; k + 4 <= K; k += 4) {
        if (sk[k + 1] != sk[k] + 1 || sk[k + 2] != sk[k] + 2 ||
            sk[k + 3] != sk[k] + 3)
            break;
        const double *sr = s + sk[k];
        double *d = sp + k * spw;
        for (int64_t x = 0; x < x4; x += 4) {
            __m256d r[4];
            for (int i = 0; i < 4; i++)
                r[i] = _mm256_loadu_pd(sr + (x + i) * ssw);
            eb_transpose4(r);
            for (int i = 0; i < 4; i++)
                _mm256_storeu_pd(d + i * spw + x, r[i]);
        }
        for (int64_t x = x4; x < ns; x++)
            for (int i = 0; i < 4; i++)
                d[i * spw + x] = sr[x * ssw + i];
    }
    vec_gemv_pack_s(ns, k, K, s, sk, ssw, sp, spw);
}

int64_t eb_kern_vec_gemv_scratch(int64_t wb, int64_t K)
{
    /* The runs for any wb' <= wb: all of wb' where K wb' fits the span,
     * else blocks of EB_VEC_GEMV_W. */
    return K * wb <= EB_VEC_GEMV_SPAN ? K * wb
           : K * EB_VEC_GEMV_W > EB_VEC_GEMV_SPAN ? K * EB_VEC_GEMV_W
                                                  : EB_VEC_GEMV_SPAN;
}

void eb_kern_vec_gemv(int64_t wb, int64_t J, int64_t K, const double *s,
                      const int64_t *sk, int64_t ssw, const double *g,
                      const int64_t *gj, const int64_t *gk, double *c,
                      const int64_t *cj, int64_t scw, double *scratch)
{
    int avx = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    double *sp = scratch;
    /* The small operand's rows k as runs along w, spw apart: all of w at
     * once where that fits EB_VEC_GEMV_SPAN, so that the columns j go
     * outer and each row of g is read from start to end in turn. */
    int64_t spw = K * wb <= EB_VEC_GEMV_SPAN ? wb : EB_VEC_GEMV_W;
    for (int64_t w0 = 0; w0 < wb; w0 += spw) {
        int64_t ns = wb - w0 < spw ? wb - w0 : spw;
        if (ssw == 1)
            for (int64_t k = 0; k < K; k++)
                memcpy(sp + k * spw, s + sk[k] + w0,
                       (size_t)ns * sizeof(double));
        else if (avx)
            vec_gemv_pack_s_avx2(ns, K, s + w0 * ssw, sk, ssw, sp, spw);
        else
            vec_gemv_pack_s(ns, 0, K, s + w0 * ssw, sk, ssw, sp, spw);
        for (int64_t j0 = 0; j0 < J; j0 += 4) {
            int nj = J - j0 < 4 ? (int)(J - j0) : 4;
            int four = nj == 4 && cj[j0 + 1] == cj[j0] + 1 &&
                       cj[j0 + 2] == cj[j0] + 2 && cj[j0 + 3] == cj[j0] + 3;
            const double *gr[4];
            for (int t = 0; t < nj; t++)
                gr[t] = g + gj[j0 + t] + w0;
            double *cw = c + w0 * scw;
            if (avx) {
                /* Sums in registers, 8 elements of w a chunk: each row
                 * (j, k) of g is read along w once, none of it reused. */
                vec_gemv_cols_avx2(ns, nj, K, sp, spw, gr, gk, cw, cj + j0,
                                   scw, four);
                continue;
            }
            for (int t = 0; t < nj; t++)
                for (int64_t x = 0; x < ns; x++) {
                    double v = 0;
                    for (int64_t k = 0; k < K; k++)
                        v += sp[k * spw + x] * gr[t][gk[k] + x];
                    cw[cj[j0 + t] + x * scw] = v;
                }
        }
    }
}

void eb_xform_simplify(eb_xform *x)
{
    int r = 0;
    for (int d = 0; d < x->rank; d++) {
        if (x->shape[d] == 1)
            continue;
        if (r > 0 && x->in_stride[r - 1] == x->in_stride[d] * x->shape[d]) {
            /* Contiguous in the input as in the output: merge into one. */
            x->shape[r - 1] *= x->shape[d];
            x->in_stride[r - 1] = x->in_stride[d];
            continue;
        }
        x->shape[r] = x->shape[d];
        x->in_stride[r] = x->in_stride[d];
        r++;
    }
    x->rank = r;
    int q = 0;
    for (int e = 0; e < x->red_rank; e++) {
        if (x->red_shape[e] == 1)
            continue;
        x->red_shape[q] = x->red_shape[e];
        x->red_stride[q] = x->red_stride[e];
        q++;
    }
    x->red_rank = q;
    eb_xform_plan(x);
}

int64_t eb_xform_out_elems(const eb_xform *x)
{
    int64_t n = 1;
    for (int d = 0; d < x->rank; d++)
        n *= x->shape[d];
    return n;
}

/* The reduced dims' odometer: advance idx (and the offset *off) to the
 * next reduced element; 0 when every one has been visited. */
static inline int red_next(const eb_xform *x, int64_t *idx, int64_t *off)
{
    for (int e = x->red_rank - 1; e >= 0; e--) {
        *off += x->red_stride[e];
        if (++idx[e] < x->red_shape[e])
            return 1;
        *off -= x->red_stride[e] * x->red_shape[e];
        idx[e] = 0;
    }
    return 0;
}

/* Sum over the reduced dims of in (offset base) into one row of out. */
static void eb_kern_reduce_row(const eb_xform *x, const double *in, int64_t n,
                       int64_t s, double *restrict out)
{
    int64_t idx[EB_MAX_RANK] = {0};
    int64_t off = 0;
    for (int64_t j = 0; j < n; j++)
        out[j] = in[j * s];
    for (;;) {
        if (!red_next(x, idx, &off))
            return;
        const double *p = in + off;
        for (int64_t j = 0; j < n; j++)
            out[j] += p[j * s];
    }
}

/* Doubles of the accumulator of reduce_row_dt (on the stack). */
enum { RED_CHUNK = 512 };

/* eb_kern_reduce_row for the other dtypes: nc components per element (2:
 * complex, whose sum is the sums of its parts), of float (f32) or double,
 * summed in double in chunks of the row and rounded once: a float32 sum
 * then does not grow an error with the number of terms (numpy's pairwise
 * float32 sum grows it with their logarithm), at the cost of the same
 * memory traffic. */
__attribute__((always_inline)) static inline void
reduce_row_dt(const eb_xform *x, const void *in, int64_t n, int64_t s,
              void *out, const int nc, const int f32)
{
    const float *inf = in;
    const double *ind = in;
    double acc[RED_CHUNK];
    int64_t step = RED_CHUNK / nc;
    for (int64_t j0 = 0; j0 < n; j0 += step) {
        int64_t m = n - j0 < step ? n - j0 : step;
        int64_t idx[EB_MAX_RANK] = {0};
        int64_t off = j0 * s;
        for (int first = 1;; first = 0) {
            for (int64_t j = 0; j < m; j++)
                for (int c = 0; c < nc; c++) {
                    int64_t q = (off + j * s) * nc + c;
                    double v = f32 ? (double)inf[q] : ind[q];
                    acc[j * nc + c] = first ? v : acc[j * nc + c] + v;
                }
            if (!red_next(x, idx, &off))
                break;
        }
        for (int64_t q = 0; q < m * nc; q++) {
            if (f32)
                ((float *)out)[j0 * nc + q] = (float)acc[q];
            else
                ((double *)out)[j0 * nc + q] = acc[q];
        }
    }
}

static void eb_kern_reduce_row_dt(const eb_xform *x, const void *in,
                                  int64_t n, int64_t s, void *out)
{
    switch (x->dt) {
    case EB_F32: reduce_row_dt(x, in, n, s, out, 1, 1); break;
    case EB_C64: reduce_row_dt(x, in, n, s, out, 2, 1); break;
    default: reduce_row_dt(x, in, n, s, out, 2, 0); break;
    }
}

void eb_xform_plan(eb_xform *x)
{
    x->planned = x->red_rank == 0;
    if (!x->planned)
        return;
    int64_t os[EB_MAX_RANK], s = 1;
    for (int d = x->rank - 1; d >= 0; d--) {
        os[d] = s;
        s *= x->shape[d];
    }
    eb_perm_plan_dt(&x->perm, x->dt, x->rank, x->shape, os, x->in_stride,
                    NULL);
}

/* A reduction row by row: out is compact; es is the element size (8 for
 * float64, whose rows eb_kern_reduce_row sums). */
__attribute__((always_inline)) static inline void
reduce_rows(const eb_xform *x, const char *in, char *out, const int64_t es)
{
    if (x->rank == 0) {
        if (es == 8 && x->dt == EB_F64)
            eb_kern_reduce_row(x, (const double *)in, 1, 0, (double *)out);
        else
            eb_kern_reduce_row_dt(x, in, 1, 0, out);
        return;
    }
    int r = x->rank;
    int64_t n = x->shape[r - 1], s = x->in_stride[r - 1];
    int64_t idx[EB_MAX_RANK] = {0};
    int64_t off = 0;
    for (char *o = out;; o += n * es) {
        if (es == 8 && x->dt == EB_F64)
            eb_kern_reduce_row(x, (const double *)in + off, n, s,
                               (double *)o);
        else
            eb_kern_reduce_row_dt(x, in + off * es, n, s, o);
        int d = r - 2;
        for (; d >= 0; d--) {
            off += x->in_stride[d];
            if (++idx[d] < x->shape[d])
                break;
            off -= x->in_stride[d] * x->shape[d];
            idx[d] = 0;
        }
        if (d < 0)
            return;
    }
}

void eb_kern_xform(const eb_xform *x, const void *in, void *out,
                   struct eb_team *team)
{
    if (x->red_rank == 0) {
        eb_xform local;
        if (!x->planned) {
            local = *x;
            eb_xform_plan(&local);
            x = &local;
        }
        eb_perm_exec(&x->perm, in, NULL, out, team);
        return;
    }
    if (x->dt == EB_F64)
        reduce_rows(x, in, out, 8);
    else
        reduce_rows(x, in, out, (int64_t)eb_dtype_size(x->dt));
}
