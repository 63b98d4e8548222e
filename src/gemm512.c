/* gemm512: the small GEMM's row kernel, 8 doubles a vector. */
#include "gemm512.h"

#include <immintrin.h>

/*
 * The layout of the work is the AVX2 row kernel's (kernels.c), scaled to
 * vectors of 8 and 32 registers: C is cut into column chunks, 24 wide
 * while more than CHUNK_MAX remain, then one last chunk of the rest (up
 * to 32; below 8 one masked vector). A chunk is computed in register
 * blocks of up to 8 rows by nv = ceil(w / 8) vectors (6 rows at nv = 4:
 * 24 accumulators), the last vector shifted left to end at the chunk's
 * last column (it recomputes up to 7 columns of the previous vector, bit
 * for bit the same values). Per contracted row a block loads its nv
 * vectors of B and broadcasts one element of A per row: 8 + 3 loads
 * against 24 multiply-adds at nv = 3. K is cut into slices whose panel
 * of B (slice x chunks) stays in L1 while the rows of A pass; slices
 * after the first load C into the accumulators, so every element of C
 * is the same chain of multiply-adds as in the AVX2 kernel.
 */
enum { CHUNK_W = 24, CHUNK_MAX = 32 };

/* Elements of B per slice of a panel (32 KiB of a 48 KiB L1), and at most
 * KC_MAX contracted rows a slice. */
enum { KC_PANEL = 4096, KC_MAX = 512 };

/* As in the AVX2 kernel: a B of PREFETCH_MIN_B elements or more (half an
 * L2 and up) has its next slice prefetched into L2 while a slice
 * computes; an A of PREFETCH_MIN_A elements or more, rows contiguous
 * along k, has its rows prefetched PREFETCH_A_BYTES ahead of the row
 * block on the first panel. */
enum { PREFETCH_MIN_B = 32768, PREFETCH_MIN_A = 4096, PREFETCH_A_BYTES = 4096 };

int eb_gemm512_usable(void) { return __builtin_cpu_supports("avx512f"); }

/* Column of vector v of a chunk of nv vectors whose last one starts at
 * `tail`. */
#define COL512(v, nv, tail) ((v) == (nv) - 1 ? (tail) : 8 * (v))

/* One register block: mr rows by nv vectors of C (masked: one vector of
 * fewer than 8 columns) over kc contracted rows. */
__attribute__((target("avx512f"), always_inline)) static inline void
block512(int64_t kc, const double *ar, int64_t sam, int64_t sak,
         const int64_t *aoff, const double *b, int64_t sbk,
         const int64_t *boff, double *cr, int64_t scm, int64_t tail,
         __mmask8 mask, int add, const int mr, const int nv, const int masked,
         const int tab)
{
    __m512d acc[8][4];
    _Pragma("GCC unroll 8")
    for (int r = 0; r < mr; r++)
        _Pragma("GCC unroll 4")
        for (int v = 0; v < nv; v++) {
            const double *o = cr + r * scm + COL512(v, nv, tail);
            acc[r][v] = !add     ? _mm512_setzero_pd()
                        : masked ? _mm512_maskz_loadu_pd(mask, o)
                                 : _mm512_loadu_pd(o);
        }
    for (int64_t k = 0; k < kc; k++) {
        const double *bk = b + (tab ? boff[k] : k * sbk);
        const double *ak = ar + (tab ? aoff[k] : k * sak);
        __m512d bv[4];
        _Pragma("GCC unroll 4")
        for (int v = 0; v < nv; v++)
            bv[v] = masked ? _mm512_maskz_loadu_pd(mask, bk)
                           : _mm512_loadu_pd(bk + COL512(v, nv, tail));
        _Pragma("GCC unroll 8")
        for (int r = 0; r < mr; r++) {
            __m512d av = _mm512_set1_pd(ak[r * sam]);
            _Pragma("GCC unroll 4")
            for (int v = 0; v < nv; v++)
                acc[r][v] = _mm512_fmadd_pd(av, bv[v], acc[r][v]);
        }
    }
    _Pragma("GCC unroll 8")
    for (int r = 0; r < mr; r++)
        _Pragma("GCC unroll 4")
        for (int v = 0; v < nv; v++) {
            double *o = cr + r * scm + COL512(v, nv, tail);
            if (masked)
                _mm512_mask_storeu_pd(o, mask, acc[r][v]);
            else
                _mm512_storeu_pd(o, acc[r][v]);
        }
}

/* block512 for mr (1-8) rows by nv (1-4) vectors, or one masked vector
 * where the chunk is narrow (fewer than 8 columns). */
__attribute__((target("avx512f"), always_inline)) static inline void
block_any(int64_t kc, const double *ar, int64_t sam, int64_t sak,
          const int64_t *aoff, const double *b, int64_t sbk,
          const int64_t *boff, double *cr, int64_t scm, int64_t tail,
          __mmask8 mask, int add, int mr, int nv, int narrow, const int tab)
{
#define EB_B512(MR, NV, MASKED) \
    block512(kc, ar, sam, sak, aoff, b, sbk, boff, cr, scm, tail, mask, add, \
             MR, NV, MASKED, tab)
#define EB_B512_NV(MR) \
    switch (narrow ? 0 : nv) { \
    case 0: EB_B512(MR, 1, 1); break; \
    case 1: EB_B512(MR, 1, 0); break; \
    case 2: EB_B512(MR, 2, 0); break; \
    case 3: EB_B512(MR, 3, 0); break; \
    default: EB_B512(MR, 4, 0); break; \
    }
    switch (mr) {
    case 8: EB_B512_NV(8) break;
    case 7: EB_B512_NV(7) break;
    case 6: EB_B512_NV(6) break;
    case 5: EB_B512_NV(5) break;
    case 4: EB_B512_NV(4) break;
    case 3: EB_B512_NV(3) break;
    case 2: EB_B512_NV(2) break;
    default: EB_B512_NV(1) break;
    }
#undef EB_B512_NV
#undef EB_B512
}

/* Rows per register block for nv vectors: at most 24 accumulators, with
 * the nv vectors of B and a broadcast in 32 registers. */
static int block_rows(int nv) { return nv <= 3 ? 8 : 6; }

/* Every cache line of the run p[0 .. n), n >= 1. Always inlined (a
 * helper of prefetches only is a pure function to GCC, which deletes its
 * calls). */
__attribute__((always_inline)) static inline void
prefetch_lines(const double *p, int64_t n)
{
    for (int64_t x = 0; x < n; x += 8)
        _mm_prefetch((const char *)(p + x), _MM_HINT_T0);
    _mm_prefetch((const char *)(p + n - 1), _MM_HINT_T0);
}

/* All rows of a panel of nq chunks of w columns for one slice of kc
 * contracted rows: each row block runs across the panel's chunks, so that
 * B's panel is read along its rows. K through the tables aoff and boff
 * where tab. pfb: the next slice (or panel) of B to prefetch into L2, a
 * share per row block; pfa: prefetch A's rows ahead of the blocks (in
 * runs of pfa contracted elements, at most a line, where tab). */
__attribute__((target("avx512f"), always_inline)) static inline void
panel512(int64_t M, int64_t w, int64_t nq, int64_t kc, const double *a,
         int64_t sam, int64_t sak, const int64_t *aoff, const double *b,
         int64_t sbk, const int64_t *boff, double *c, int64_t scm, int add,
         const double *pfb, int pfa, const int tab)
{
    int nv = w < 8 ? 1 : (int)((w + 7) / 8), mrow = block_rows(nv);
    /* The divisions only where a prefetch needs them: a GEMM of a few
     * hundred multiply-adds spent a fifth of its time on them. */
    int64_t pfd = 0, nblk = 1;
    if (pfa) {
        pfd = PREFETCH_A_BYTES / (8 * kc);
        pfd = pfd < mrow ? mrow : pfd;
    }
    if (pfb)
        nblk = (M + mrow - 1) / mrow;
    int64_t tail = w < 8 ? 0 : w - 8;
    __mmask8 mask = (__mmask8)((1u << (w < 8 ? w : 8)) - 1);
    for (int64_t m = 0; m < M; m += mrow) {
        int mr = M - m < mrow ? (int)(M - m) : mrow;
        const double *ar = a + m * sam;
        if (pfa)
            for (int64_t r = m + pfd; r < m + pfd + mr && r < M; r++) {
                const double *pa = a + r * sam;
                if (!tab) {
                    prefetch_lines(pa, kc);
                    continue;
                }
                for (int64_t x = 0; x < kc; x += pfa)
                    _mm_prefetch((const char *)(pa + aoff[x]), _MM_HINT_T0);
                _mm_prefetch((const char *)(pa + aoff[kc - 1]), _MM_HINT_T0);
            }
        for (int64_t q = 0; q < nq; q++) {
            if (pfb) {
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
            block_any(kc, ar, sam, sak, aoff, b + q * w, sbk, boff,
                      c + m * scm + q * w, scm, tail, mask, add, mr, nv, w < 8,
                      tab);
        }
    }
}

/* panel512 with one stride per operand, and through tables. */
__attribute__((target("avx512f"))) static void
panel_strided(int64_t M, int64_t w, int64_t nq, int64_t kc, const double *a,
              int64_t sam, int64_t sak, const double *b, int64_t sbk,
              double *c, int64_t scm, int add, const double *pfb, int pfa)
{
    panel512(M, w, nq, kc, a, sam, sak, NULL, b, sbk, NULL, c, scm, add, pfb,
             pfa, 0);
}

__attribute__((target("avx512f"))) static void
panel_tables(int64_t M, int64_t w, int64_t nq, int64_t kc, const double *a,
             int64_t sam, const int64_t *aoff, const double *b,
             const int64_t *boff, double *c, int64_t scm, int add, int pfa)
{
    panel512(M, w, nq, kc, a, sam, 0, aoff, b, 0, boff, c, scm, add, NULL,
             pfa, 1);
}

/* Chunks of CHUNK_W in the panel that starts `left` columns before C's
 * end, for a K of `total`: 64 contracted rows of the panel about
 * KC_PANEL elements; 1 for the last chunk. */
static int64_t panel_chunks(int64_t left, int64_t total)
{
    if (left <= CHUNK_MAX)
        return 1;
    int64_t full = (left - CHUNK_MAX + CHUNK_W - 1) / CHUNK_W;
    int64_t want = KC_PANEL / (CHUNK_W * (total < 64 ? total : 64));
    want = want < 1 ? 1 : want;
    return full < want ? full : want;
}

__attribute__((noinline)) static void
rowc_panels(int64_t M, int64_t N, int64_t K, const double *a, int64_t sam,
            const double *b, int64_t sbn, const eb_gemm_k *k, double *c,
            int64_t scm)
{
    int64_t aoff[KC_MAX], boff[KC_MAX];
    double bt[KC_PANEL];
    int64_t total = k->K1 * K;
    for (int64_t n0 = 0; n0 < N;) {
        int64_t left = N - n0;
        int64_t w = left > CHUNK_MAX ? CHUNK_W : left;
        int64_t nq = panel_chunks(left, total), pw = w * nq;
        int64_t kslice = total * pw <= KC_PANEL && total <= KC_MAX ? total
                         : KC_PANEL / pw < KC_MAX ? KC_PANEL / pw
                                                  : KC_MAX;
        const double *bp = b + n0 * sbn;
        for (int64_t f0 = 0; f0 < total; f0 += kslice) {
            int64_t kc = total - f0 < kslice ? total - f0 : kslice;
            int pfa = n0 == 0 && k->sak == 1 && M * total >= PREFETCH_MIN_A;
            if (k->K1 == 1 && sbn == 1) {
                /* B in place, its next slice (or the next panel's first)
                 * prefetched into L2 where it is large enough to come
                 * from memory. */
                const double *pfb =
                    total * N < PREFETCH_MIN_B ? NULL
                    : f0 + kslice < total      ? bp + (f0 + kslice) * k->sbk
                    : n0 + pw < N              ? b + n0 + pw
                                               : NULL;
                panel_strided(M, w, nq, kc, a + f0 * k->sak, sam, k->sak,
                              bp + f0 * k->sbk, k->sbk, c + n0, scm, f0 > 0,
                              pfb, pfa);
                continue;
            }
            if (k->K1 == 1) {
                /* B's columns apart: the slice of its panel copied
                 * row-major (kc pw elements against M kc pw
                 * multiply-adds), A read in place. */
                eb_gemm_pack_b(kc, pw, bp + f0 * k->sbk, k->sbk, NULL, sbn,
                               bt);
                panel_strided(M, w, nq, kc, a + f0 * k->sak, sam, k->sak, bt,
                              pw, c + n0, scm, f0 > 0, NULL, pfa);
                continue;
            }
            eb_gemm_k_offsets(f0, kc, K, k, aoff, boff);
            const double *bq = bp;
            if (sbn != 1) {
                eb_gemm_pack_b(kc, pw, bp, 0, boff, sbn, bt);
                for (int64_t i = 0; i < kc; i++)
                    boff[i] = i * pw;
                bq = bt;
            }
            /* A's rows prefetched in its contiguous runs of K. */
            panel_tables(M, w, nq, kc, a, sam, aoff, bq, boff, c + n0, scm,
                         f0 > 0, pfa ? (int)(K < 8 ? K : 8) : 0);
        }
        n0 += pw;
    }
}

void eb_kern_gemm_rowc_avx512(int64_t M, int64_t N, int64_t K,
                              const double *a, int64_t sam, const double *b,
                              int64_t sbn, const eb_gemm_k *k, double *c,
                              int64_t scm)
{
    /* One chunk of one slice with B in place (a batch element of a tiny
     * GEMM): straight to its row blocks, without the panel set-up and the
     * tables on the stack; A's rows prefetched where rowc_panels would
     * (a long A: str_mps's 2413 x 19 x 19 steps read theirs from memory). */
    if (k->K1 == 1 && sbn == 1 && eb_gemm512_one_panel(N, K)) {
        panel_strided(M, N, 1, K, a, sam, k->sak, b, k->sbk, c, scm, 0, NULL,
                      k->sak == 1 && M * K >= PREFETCH_MIN_A);
        return;
    }
    rowc_panels(M, N, K, a, sam, b, sbn, k, c, scm);
}

int eb_gemm512_one_panel(int64_t N, int64_t KT)
{
    return N <= CHUNK_MAX && KT <= KC_MAX && KT * N <= KC_PANEL;
}

/* eb_kern_gemm_batch_avx512 for a one-level (tab = 0) or two-level K:
 * aoff, boff and poff (i N) hold the tables of the two-level one. */
__attribute__((target("avx512f"), always_inline)) static inline void
batch512(int64_t W, int64_t M, int64_t N, int64_t total, const double *a,
         int64_t sam, int64_t saw, const double *b, int64_t sbn,
         int64_t sbw, const eb_gemm_k *k, double *c, int64_t scm,
         int64_t scw, double *bt, const int64_t *aoff, const int64_t *boff,
         const int64_t *poff, const int tab)
{
    int nv = N < 8 ? 1 : (int)((N + 7) / 8), mrow = block_rows(nv);
    int64_t tail = N < 8 ? 0 : N - 8;
    __mmask8 mask = (__mmask8)((1u << (N < 8 ? N : 8)) - 1);
    int pf = eb_gemm_batch_pf(W, M, N, total, sam);
    for (int64_t w = 0; w < W; w++) {
        const double *aw = a + w * saw, *bw = b + w * sbw;
        if (pf && w + 1 < W)
            eb_gemm_prefetch_a(aw + saw, M, total, tab ? 0 : k->sak,
                               tab ? aoff : NULL);
        double *cw = c + w * scw;
        int64_t sb = k->sbk;
        const int64_t *bo = boff;
        if (sbn != 1) {
            eb_gemm_pack_b(total, N, bw, k->sbk, tab ? boff : NULL, sbn, bt);
            bw = bt;
            sb = N;
            bo = poff;
        }
        for (int64_t m = 0; m < M; m += mrow) {
            int mr = M - m < mrow ? (int)(M - m) : mrow;
            block_any(total, aw + m * sam, sam, tab ? 0 : k->sak, aoff, bw,
                      tab ? 0 : sb, bo, cw + m * scm, scm, tail, mask, 0, mr,
                      nv, N < 8, tab);
        }
    }
}

__attribute__((target("avx512f"))) void
eb_kern_gemm_batch_avx512(int64_t W, int64_t M, int64_t N, int64_t K,
                          const double *a, int64_t sam, int64_t saw,
                          const double *b, int64_t sbn, int64_t sbw,
                          const eb_gemm_k *k, double *c, int64_t scm,
                          int64_t scw)
{
    /* panel512's one chunk of one slice, its set-up (the tables of a
     * two-level K included) done once for the W elements: the same row
     * blocks over the same copy of B where its columns are apart, so the
     * same chains of multiply-adds as W calls of
     * eb_kern_gemm_rowc_avx512. */
    double bt[KC_PANEL];
    int64_t total = k->K1 * K;
    if (k->K1 == 1) {
        batch512(W, M, N, total, a, sam, saw, b, sbn, sbw, k, c, scm, scw, bt,
                 NULL, NULL, NULL, 0);
        return;
    }
    int64_t aoff[KC_MAX], boff[KC_MAX], poff[KC_MAX];
    eb_gemm_batch_tables(K, k, N, aoff, boff, poff);
    batch512(W, M, N, total, a, sam, saw, b, sbn, sbw, k, c, scm, scw, bt,
             aoff, boff, poff, 1);
}

/*
 * The few-K kernel (kernels.c, eb_kern_gemm_few_k_avx2) in 8-wide
 * vectors for up to EB_FEW_K512_ROWS rows: 16 columns of C at a time
 * (the last strip masked), every row of B's strip read once and all of K
 * summed in 2 M accumulators, each row of B prefetched FEW_K512_PF
 * elements ahead. Each element of C is the chain of multiply-adds of the
 * AVX2 kernel and the row kernel, over k in order from zero. Without
 * slices: for gm_queen's eager 243 x (9 x 19683 x 27) step (B from
 * memory, a scratch program) 40-44 ms against 44-48 with slices of 8
 * rows, and 62-65 in the row kernel.
 */
enum { FEW_K512_PF = 128, FEW_K512_COLS = 16 };

__attribute__((target("avx512f"), always_inline)) static inline void
few_k512_strip(int64_t j, const double *ap, const double *b,
               const int64_t *boff, int64_t kt, double *c, int64_t scm,
               int64_t scn, __mmask8 m0, __mmask8 m1, int pf, const int mr)
{
    __m512d acc[EB_FEW_K512_ROWS][2];
    _Pragma("GCC unroll 12")
    for (int r = 0; r < mr; r++) {
        acc[r][0] = _mm512_setzero_pd();
        acc[r][1] = _mm512_setzero_pd();
    }
    for (int64_t t = 0; t < kt; t++) {
        const double *br = b + boff[t] + j;
        if (pf) {
            _mm_prefetch((const char *)(br + FEW_K512_PF), _MM_HINT_T0);
            _mm_prefetch((const char *)(br + FEW_K512_PF + 8), _MM_HINT_T0);
        }
        __m512d v0 = _mm512_maskz_loadu_pd(m0, br);
        __m512d v1 = _mm512_maskz_loadu_pd(m1, br + 8);
        _Pragma("GCC unroll 12")
        for (int r = 0; r < mr; r++) {
            __m512d x = _mm512_set1_pd(ap[t * mr + r]);
            acc[r][0] = _mm512_fmadd_pd(x, v0, acc[r][0]);
            acc[r][1] = _mm512_fmadd_pd(x, v1, acc[r][1]);
        }
    }
    _Pragma("GCC unroll 12")
    for (int r = 0; r < mr; r++) {
        double *cr = c + r * scm;
        if (scn == 1) {
            _mm512_mask_storeu_pd(cr + j, m0, acc[r][0]);
            _mm512_mask_storeu_pd(cr + j + 8, m1, acc[r][1]);
        } else {
            double v[16];
            _mm512_storeu_pd(v, acc[r][0]);
            _mm512_storeu_pd(v + 8, acc[r][1]);
            for (int q = 0; q < 16; q++)
                if ((q < 8 ? m0 >> q : m1 >> (q - 8)) & 1)
                    cr[(j + q) * scn] = v[q];
        }
    }
}

__attribute__((target("avx512f"), always_inline)) static inline void
few_k512_rows(int64_t N, const double *ap, const double *b,
              const int64_t *boff, int64_t kt, double *c, int64_t scm,
              int64_t scn, const int mr)
{
    int64_t j = 0;
    for (; j + FEW_K512_COLS <= N; j += FEW_K512_COLS)
        few_k512_strip(j, ap, b, boff, kt, c, scm, scn, 0xff, 0xff,
                       N - j > FEW_K512_PF, mr);
    if (j < N) {
        int64_t left = N - j;
        __mmask8 m0 = (__mmask8)(left >= 8 ? 0xff : (1u << left) - 1);
        __mmask8 m1 = (__mmask8)(left > 8 ? (1u << (left - 8)) - 1 : 0);
        few_k512_strip(j, ap, b, boff, kt, c, scm, scn, m0, m1, 0, mr);
    }
}

__attribute__((target("avx512f"))) void
eb_kern_gemm_few_k_avx512(int64_t M, int64_t N, int64_t K, const double *a,
                          int64_t sam, const double *b, const eb_gemm_k *k,
                          double *c, int64_t scm, int64_t scn)
{
    int64_t boff[EB_FEW_K_MAX];
    double ap[EB_FEW_K_MAX * EB_FEW_K512_ROWS];
    int64_t kt = k->K1 * K;
    eb_gemm_few_k_pack(M, K, a, sam, k, boff, ap);
    switch (M) {
#define EB_FEWK512(MR) \
    case MR: few_k512_rows(N, ap, b, boff, kt, c, scm, scn, MR); break;
    EB_FEWK512(1) EB_FEWK512(2) EB_FEWK512(3) EB_FEWK512(4) EB_FEWK512(5)
    EB_FEWK512(6) EB_FEWK512(7) EB_FEWK512(8) EB_FEWK512(9) EB_FEWK512(10)
    EB_FEWK512(11)
    default: EB_FEWK512(12)
#undef EB_FEWK512
    }
}
