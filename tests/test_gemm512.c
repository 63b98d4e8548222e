/* test_gemm512: the AVX-512 row kernel against a chain of multiply-adds. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gemm512.h"
#include "kernels.h"
#include "vec512.h"

static double rand_unit(uint64_t *seed)
{
    *seed = *seed * 6364136223846793005ULL + 1;
    return (double)(*seed >> 40) / 16777216.0 - 0.5;
}

/* A value with a full 53-bit significand, so that products and sums
 * round (rand_unit's 24 bits leave chains of up to 2^5 terms exact in any
 * order). */
static double rand_full(uint64_t *seed)
{
    double hi = rand_unit(seed);
    return hi + rand_unit(seed) * 0x1p-26;
}

/* x[0 .. n) from rand_full. */
static void fill_random(double *x, int64_t n, uint64_t *seed)
{
    for (int64_t i = 0; i < n; i++)
        x[i] = rand_full(seed);
}

/*
 * C = A B with padded strides, K as K1 runs of K contracted elements with
 * gaps between the runs where K1 > 1: A row-major (rows K1 (K + 2) + 3
 * apart) or, colmajor_a, column-major (columns M + 1 apart); B row-major
 * (rows N + 5 apart, runs a row apart) or, colmajor_b, column-major
 * (columns K1 (K + 1) + 5 apart: its panels are copied); C's rows N + 2
 * apart. Checked against fma() over the flattened k in order: each
 * element of C is one chain of multiply-adds from 0, which the kernel
 * computes in a vector lane slice after slice, so the results are equal
 * bit for bit. C's padding and the row after C must be left alone.
 */
static void check_shape(int64_t M, int64_t N, int64_t K1, int64_t K,
                        int colmajor_a, int colmajor_b, uint64_t *seed)
{
    eb_gemm_k k;
    int64_t sam, sbn;
    if (colmajor_a) {
        sam = 1;
        k.sak = M + 1;
        k.sak1 = (K + 2) * k.sak;
    } else {
        k.sak = 1;
        k.sak1 = K + 2;
        sam = K1 * k.sak1 + 3;
    }
    if (colmajor_b) {
        k.sbk = 1;
        k.sbk1 = K + 1;
        sbn = K1 * k.sbk1 + 5;
    } else {
        sbn = 1;
        k.sbk = N + 5;
        k.sbk1 = (K + 1) * k.sbk;
    }
    k.K1 = K1;
    int64_t scm = N + 2;
    int64_t na = colmajor_a ? K1 * k.sak1 : M * sam;
    int64_t nb = colmajor_b ? N * sbn : K1 * k.sbk1;
    int64_t nc = (M + 1) * scm;
    double *a = malloc(sizeof *a * (size_t)na);
    double *b = malloc(sizeof *b * (size_t)nb);
    double *c = malloc(sizeof *c * (size_t)nc);
    if (!a || !b || !c) {
        EB_CHECK(0, "out of memory");
        free(a), free(b), free(c);
        return;
    }
    fill_random(a, na, seed);
    fill_random(b, nb, seed);
    for (int64_t i = 0; i < nc; i++)
        c[i] = 1e300;
    eb_kern_gemm_rowc_avx512(M, N, K, a, sam, b, sbn, &k, c, scm);
    int64_t wrong = 0, touched = 0;
    for (int64_t m = 0; m < M; m++)
        for (int64_t n = 0; n < N; n++) {
            double ref = 0;
            for (int64_t k1 = 0; k1 < K1; k1++)
                for (int64_t x = 0; x < K; x++)
                    ref = fma(a[m * sam + k1 * k.sak1 + x * k.sak],
                              b[k1 * k.sbk1 + x * k.sbk + n * sbn], ref);
            wrong += c[m * scm + n] != ref;
        }
    for (int64_t m = 0; m <= M; m++)
        for (int64_t n = m < M ? N : 0; n < scm; n++)
            touched += c[m * scm + n] != 1e300;
    EB_CHECK(wrong == 0 && touched == 0,
             "%lld x %lld x (%lld x %lld) (A %s, B %s): %lld elements differ "
             "from the multiply-add chain, %lld outside C written",
             (long long)M, (long long)N, (long long)K1, (long long)K,
             colmajor_a ? "column-major" : "row-major",
             colmajor_b ? "column-major" : "row-major", (long long)wrong,
             (long long)touched);
    free(a);
    free(b);
    free(c);
}

/*
 * The few-K kernel (eb_kern_gemm_few_k_avx512): C = A B for M <= 12 rows,
 * B contiguous along n (rows N + 5 apart, K as K1 runs of K with gaps),
 * A row-major with gaps, C row-major (rows N + 2 apart) or strided both
 * ways (columns 3 apart, rows 3 N + 1). Against fma() over the flattened
 * k in order, bit for bit; nothing but C's elements written.
 */
static void check_few_k(int64_t M, int64_t N, int64_t K1, int64_t K,
                        int strided_c, uint64_t *seed)
{
    eb_gemm_k k = {K1, K + 2, 1, (K + 1) * (N + 5), N + 5};
    int64_t sam = K1 * k.sak1 + 3;
    int64_t scn = strided_c ? 3 : 1, scm = strided_c ? 3 * N + 1 : N + 2;
    int64_t na = M * sam, nb = K1 * k.sbk1, nc = (M + 1) * scm;
    double *a = malloc(sizeof *a * (size_t)na);
    double *b = malloc(sizeof *b * (size_t)nb);
    double *c = malloc(sizeof *c * (size_t)nc);
    if (!a || !b || !c) {
        EB_CHECK(0, "out of memory");
        free(a), free(b), free(c);
        return;
    }
    fill_random(a, na, seed);
    fill_random(b, nb, seed);
    for (int64_t i = 0; i < nc; i++)
        c[i] = 1e300;
    eb_kern_gemm_few_k_avx512(M, N, K, a, sam, b, &k, c, scm, scn);
    int64_t wrong = 0, touched = 0;
    for (int64_t m = 0; m < M; m++)
        for (int64_t n = 0; n < N; n++) {
            double ref = 0;
            for (int64_t k1 = 0; k1 < K1; k1++)
                for (int64_t x = 0; x < K; x++)
                    ref = fma(a[m * sam + k1 * k.sak1 + x * k.sak],
                              b[k1 * k.sbk1 + x * k.sbk + n], ref);
            wrong += c[m * scm + n * scn] != ref;
        }
    for (int64_t i = 0; i < nc; i++) {
        int64_t m = i / scm, n = i % scm;
        int inside = m < M && n % scn == 0 && n / scn < N;
        touched += !inside && c[i] != 1e300;
    }
    EB_CHECK(wrong == 0 && touched == 0,
             "few-K %lld x %lld x (%lld x %lld) (C %s): %lld elements differ "
             "from the multiply-add chain, %lld outside C written",
             (long long)M, (long long)N, (long long)K1, (long long)K,
             strided_c ? "strided" : "row-major", (long long)wrong,
             (long long)touched);
    free(a);
    free(b);
    free(c);
}

/*
 * eb_kern_small_gemm_batch against W calls of eb_kern_small_gemm, equal
 * bit for bit, and the naive sum within rounding: C row-major (layout 0),
 * column-major (1) or strided both ways (2); A and B either way; the
 * batch elements apart (after each other with a gap) or interleaved (the
 * batch dim innermost in every operand). K is K1 x Kin: A stores its
 * contracted elements as (x, k1) and B as (k1, x), so K1 > 1 is a
 * two-level K. Nothing outside the elements of C may be written.
 */
static void check_batch(int64_t W, int64_t M, int64_t N, int64_t K1,
                        int64_t Kin, int colmajor_a, int colmajor_b,
                        int layout, int interleaved, uint64_t *seed)
{
    eb_gemm_k k = {K1, 0, 0, 0, 0};
    int64_t K = K1 * Kin, sam, sbn, scm, scn, saw, sbw, scw;
    /* Element strides inside one batch element, then the batch stride. */
    int64_t ea = M * K + 3, eb = K * N + 2, ec = M * N + 5;
    int64_t ia = interleaved ? W : 1, ib = interleaved ? W : 1;
    if (colmajor_a)
        sam = ia, k.sak1 = M * ia, k.sak = K1 * M * ia;
    else
        sam = K * ia, k.sak1 = ia, k.sak = K1 * ia;
    if (colmajor_b)
        k.sbk = ib, k.sbk1 = Kin * ib, sbn = K * ib;
    else
        sbn = ib, k.sbk = N * ib, k.sbk1 = Kin * N * ib;
    saw = interleaved ? 1 : ea;
    sbw = interleaved ? 1 : eb;
    int64_t ic = interleaved ? W : 1;
    if (layout == 0)
        scn = ic, scm = N * ic;
    else if (layout == 1)
        scm = ic, scn = M * ic;
    else
        scn = 2 * ic, scm = 2 * N * ic;
    scw = interleaved ? 1 : (layout == 2 ? 2 * ec : ec);
    int64_t na = interleaved ? W * M * K : W * ea;
    int64_t nb = interleaved ? W * K * N : W * eb;
    int64_t nc = interleaved ? W * M * N * (layout == 2 ? 2 : 1)
                             : W * scw;
    double *a = malloc(sizeof *a * (size_t)na);
    double *b = malloc(sizeof *b * (size_t)nb);
    double *c1 = malloc(sizeof *c1 * (size_t)nc);
    double *c2 = malloc(sizeof *c2 * (size_t)nc);
    if (!a || !b || !c1 || !c2) {
        EB_CHECK(0, "out of memory");
        free(a), free(b), free(c1), free(c2);
        return;
    }
    fill_random(a, na, seed);
    fill_random(b, nb, seed);
    for (int64_t i = 0; i < nc; i++)
        c1[i] = c2[i] = 1e300;
    eb_kern_small_gemm_batch(W, M, N, Kin, a, sam, saw, b, sbn, sbw, &k, c1,
                             scm, scn, scw);
    for (int64_t w = 0; w < W; w++)
        eb_kern_small_gemm(M, N, Kin, a + w * saw, sam, b + w * sbw, sbn, &k,
                           c2 + w * scw, scm, scn);
    int64_t differ = 0, off = 0, touched = 0;
    for (int64_t i = 0; i < nc; i++)
        differ += memcmp(&c1[i], &c2[i], sizeof c1[i]) != 0;
    for (int64_t w = 0; w < W; w++)
        for (int64_t m = 0; m < M; m++)
            for (int64_t n = 0; n < N; n++) {
                double ref = 0, mag = 0;
                for (int64_t k1 = 0; k1 < K1; k1++)
                    for (int64_t x = 0; x < Kin; x++) {
                        double t =
                            a[w * saw + m * sam + k1 * k.sak1 + x * k.sak] *
                            b[w * sbw + k1 * k.sbk1 + x * k.sbk + n * sbn];
                        ref += t;
                        mag += fabs(t);
                    }
                double *e = &c1[w * scw + m * scm + n * scn];
                off += !(fabs(*e - ref) <= 1e-13 * (mag + 1));
                *e = 1e300;
            }
    for (int64_t i = 0; i < nc; i++)
        touched += c1[i] != 1e300;
    EB_CHECK(differ == 0 && off == 0 && touched == 0,
             "batch of %lld x %lld x %lld x (%lld x %lld) (A %s, B %s, C "
             "layout %d, %s): %lld elements differ from the calls, %lld "
             "from the sum, %lld outside C written",
             (long long)W, (long long)M, (long long)N, (long long)K1,
             (long long)Kin, colmajor_a ? "column-major" : "row-major",
             colmajor_b ? "column-major" : "row-major", layout,
             interleaved ? "interleaved" : "apart", (long long)differ,
             (long long)off, (long long)touched);
    free(a);
    free(b);
    free(c1);
    free(c2);
}

/*
 * The vector-batch block (kernels.h's pack of wb elements of w: A's row
 * (m, k) of chunk x at x 8 M K + (m K + k) 8, B's (k, n) at x 8 K N +
 * (k N + n) 8; lanes past wb hold NaN, which must not reach C) into C of
 * layout `lay`: 0 w contiguous (scw 1, rows and columns apart), 1 columns
 * contiguous and w strided (stored as transposed rows of 4), 2 both
 * strided (scattered). Through eb_kern_vec_gemm on any CPU (within
 * rounding of the chain: the AVX2 blocks' tail lanes multiply and add
 * apart) and, with AVX-512, eb_kern_vec_packed_avx512 bit for bit against
 * fma() over k in order. Only C's elements may be written.
 */
static void check_vec(int64_t wb, int64_t M, int64_t N, int64_t K, int lay,
                      uint64_t *seed)
{
    int64_t lanes = (wb + 7) / 8 * 8;
    int64_t cn_st = lay == 2 ? 2 : 1, scw = lay == 0 ? 1 : cn_st * N + 3;
    int64_t cm_st = lay == 0 ? wb + 5 : scw * wb + 1;
    int64_t cm[64], cn[64];
    for (int64_t m = 0; m < M; m++)
        cm[m] = lay == 0 ? m * (N * (wb + 5) + 2) : m * cm_st;
    for (int64_t n = 0; n < N; n++)
        cn[n] = lay == 0 ? n * (wb + 5) : n * cn_st;
    int64_t span = cm[M - 1] + cn[N - 1] + (wb - 1) * scw + 1 + 8;
    double *pa = malloc(sizeof *pa * (size_t)(lanes * M * K));
    double *pb = malloc(sizeof *pb * (size_t)(lanes * K * N));
    double *c = malloc(sizeof *c * (size_t)span);
    double *ref = malloc(sizeof *ref * (size_t)(wb * M * N));
    if (!pa || !pb || !c || !ref) {
        EB_CHECK(0, "out of memory");
        free(pa), free(pb), free(c), free(ref);
        return;
    }
    for (int64_t x = 0; x < lanes * M * K; x++)
        pa[x] = x % 8 + x / (8 * M * K) * 8 < wb ? rand_full(seed) : NAN;
    for (int64_t x = 0; x < lanes * K * N; x++)
        pb[x] = x % 8 + x / (8 * K * N) * 8 < wb ? rand_full(seed) : NAN;
    for (int64_t w = 0; w < wb; w++)
        for (int64_t m = 0; m < M; m++)
            for (int64_t n = 0; n < N; n++) {
                double s = 0;
                const double *a = pa + w / 8 * 8 * M * K + w % 8;
                const double *b = pb + w / 8 * 8 * K * N + w % 8;
                for (int64_t k = 0; k < K; k++)
                    s = fma(a[(m * K + k) * 8], b[(k * N + n) * 8], s);
                ref[(w * M + m) * N + n] = s;
            }
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1 && !eb_gemm512_usable())
            break;
        for (int64_t x = 0; x < span; x++)
            c[x] = -7.0;
        if (pass == 0)
            eb_kern_vec_gemm(wb, M, N, K, pa, pb, c, cm, cn, scw);
        else
            eb_kern_vec_packed_avx512(wb, M, N, K, pa, pb, c, cm, cn, scw);
        int64_t wrong = 0, written = 0;
        for (int64_t w = 0; w < wb; w++)
            for (int64_t m = 0; m < M; m++)
                for (int64_t n = 0; n < N; n++) {
                    double got = c[cm[m] + cn[n] + w * scw],
                           want = ref[(w * M + m) * N + n];
                    wrong += pass ? got != want
                                  : !(fabs(got - want) <= 1e-13 * (K + 1));
                    c[cm[m] + cn[n] + w * scw] = -7.0;
                }
        for (int64_t x = 0; x < span; x++)
            written += c[x] != -7.0;
        EB_CHECK(wrong == 0 && written == 0,
                 "%s wb %lld, %lld x %lld x %lld, C layout %d: %lld "
                 "elements wrong, %lld written outside C",
                 pass ? "eb_kern_vec_packed_avx512" : "eb_kern_vec_gemm",
                 (long long)wb, (long long)M, (long long)N, (long long)K, lay,
                 (long long)wrong, (long long)written);
    }
    free(pa);
    free(pb);
    free(c);
    free(ref);
}

/*
 * The vector-batch GEMM in rows of C along n: eb_kern_vec_rows_pack of B
 * (w of unit stride, rows (k, n) scattered: k's rows apart, n's one run
 * of 3 and the rest apart) and eb_kern_vec_rows_avx512 with A read in
 * place (rows apart, contracted elements in runs of 2 apart, w at
 * stride saw) into C
 * whose n is one run (rows apart, w at stride scw); bit for bit against
 * fma() over k in order, and only C's elements written. Needs AVX-512.
 */
static void check_vec_rows(int64_t wb, int64_t M, int64_t N, int64_t K,
                           int64_t saw, uint64_t *seed)
{
    int64_t am[32], ak[600], bk[600], bn[32], cm[32];
    /* A's rows m outer, its contracted elements in runs of 2 (k, k + 1
     * adjacent, runs apart), w innermost at stride saw: a run of 2 takes
     * 2 + saw (wb - 1) elements. */
    int64_t run = 2 + saw * (wb - 1) + 3, row = (K + 1) / 2 * run + 1;
    for (int64_t k = 0; k < K; k++) {
        ak[k] = k / 2 * run + k % 2;
        bk[k] = k * (N * (wb + 3) + 5);
    }
    for (int64_t m = 0; m < M; m++)
        am[m] = m * row;
    for (int64_t n = 0; n < N; n++)
        bn[n] = n < 3 ? n * wb : (n + 1) * (wb + 3);
    int64_t scw = N + 2;
    for (int64_t m = 0; m < M; m++)
        cm[m] = m * (scw * wb + 3);
    /* (B's last row followed by wb more elements: the next block that
     * the pack prefetches) */
    int64_t na = M * row, nb = bk[K - 1] + bn[N - 1] + 2 * wb;
    int64_t span = cm[M - 1] + (wb - 1) * scw + N + 8;
    double *a = malloc(sizeof *a * (size_t)na);
    double *b = malloc(sizeof *b * (size_t)nb);
    double *pk = malloc(sizeof *pk * (size_t)(wb * K * N));
    double *c = malloc(sizeof *c * (size_t)span);
    if (!a || !b || !pk || !c) {
        EB_CHECK(0, "out of memory");
        free(a), free(b), free(pk), free(c);
        return;
    }
    fill_random(a, na, seed);
    fill_random(b, nb, seed);
    for (int64_t x = 0; x < span; x++)
        c[x] = -7.0;
    eb_kern_vec_rows_pack(wb, K, N, b, bk, bn, pk, wb % 2 ? 0 : wb);
    int64_t packed = 0;
    for (int64_t x = 0; x < wb; x++)
        for (int64_t k = 0; k < K; k++)
            for (int64_t n = 0; n < N; n++)
                packed += pk[(x * K + k) * N + n] == b[bk[k] + bn[n] + x];
    eb_kern_vec_rows_avx512(wb, M, N, K, a, am, ak, saw, pk, c, cm, scw);
    int64_t wrong = 0, written = 0;
    for (int64_t x = 0; x < wb; x++)
        for (int64_t m = 0; m < M; m++)
            for (int64_t n = 0; n < N; n++) {
                double want = 0;
                for (int64_t k = 0; k < K; k++)
                    want = fma(a[am[m] + ak[k] + x * saw],
                               b[bk[k] + bn[n] + x], want);
                double *got = &c[cm[m] + x * scw + n];
                wrong += *got != want;
                *got = -7.0;
            }
    for (int64_t x = 0; x < span; x++)
        written += c[x] != -7.0;
    EB_CHECK(packed == wb * K * N && wrong == 0 && written == 0,
             "vec rows wb %lld, %lld x %lld x %lld, A's w stride %lld: "
             "%lld of %lld packed right, %lld elements wrong, %lld written "
             "outside C",
             (long long)wb, (long long)M, (long long)N, (long long)K,
             (long long)saw, (long long)packed, (long long)(wb * K * N),
             (long long)wrong, (long long)written);
    free(a);
    free(b);
    free(pk);
    free(c);
}

int main(void)
{
    uint64_t bseed = 11;
    /* The batch entry on any CPU (without AVX-512 it is the calls):
     * shapes of one panel (N or M up to 32, K N up to 4096, K up to 512)
     * and past it, every orientation. */
    static const int64_t BNs[] = {1, 3, 4, 8, 11, 16, 17, 32, 33};
    static const int64_t BKs[] = {1, 4, 11, 64, 65, 130, 513};
    int bv = 0;
    for (int64_t M = 1; M <= 17; M += (M < 9 ? 1 : 8))
        for (size_t i = 0; i < sizeof BNs / sizeof BNs[0]; i++)
            for (size_t j = 0; j < sizeof BKs / sizeof BKs[0]; j++, bv++)
                check_batch(1 + bv % 4, M, BNs[i], 1, BKs[j], bv % 2,
                            (bv / 2) % 2, (bv / 4) % 3, (bv / 3) % 2, &bseed);
    /* Two-level K: K1 runs of 1 to 7, in all up to past one slice. */
    static const int64_t BK1s[] = {2, 4, 9, 130};
    for (int64_t M = 1; M <= 17; M += 4)
        for (size_t i = 0; i < sizeof BNs / sizeof BNs[0]; i++)
            for (size_t j = 0; j < sizeof BK1s / sizeof BK1s[0]; j++, bv++)
                check_batch(2 + bv % 3, M, BNs[i], BK1s[j], 1 + bv % 7,
                            bv % 2, (bv / 2) % 2, (bv / 4) % 3, (bv / 3) % 2,
                            &bseed);
    check_batch(1900, 4, 4, 1, 4, 0, 0, 0, 0, &bseed);
    check_batch(1900, 1, 16, 1, 11, 0, 0, 1, 1, &bseed);
    check_batch(1900, 16, 16, 4, 4, 0, 0, 0, 0, &bseed);
    check_batch(64, 16, 16, 1, 16, 1, 1, 0, 0, &bseed);
    check_batch(7, 32, 32, 1, 128, 0, 1, 1, 0, &bseed);
    /* C column-major against a large row-major B: the elements one by
     * one (the few-K and few-rows kernels stream B), not C^T's rows. */
    check_batch(3, 4, 2048, 1, 64, 0, 0, 1, 0, &bseed);
    check_batch(2, 4, 1024, 2, 64, 0, 0, 1, 0, &bseed);
    check_batch(2, 9, 8192, 1, 16, 0, 0, 1, 0, &bseed);
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
        /* tensornetwork's last step: 8 x (4 x 8192 x (2 x 128)), A and B
         * row-major, C column-major; the same with 16 columns is one
         * panel of C^T's row kernel. */
        eb_gemm_k k = {2, 128, 1, 128 * 8192, 8192};
        int f0 = eb_kern_small_gemm_batch_form(4, 8192, 128, &k, 256, 1, 1, 4);
        int f1 = eb_kern_small_gemm_batch_form(4, 16, 128, &k, 256, 1, 1, 4);
        EB_CHECK(f0 == 0 && f1 == 2,
                 "batch form of 4 x 8192 x 256 with C column-major %d "
                 "(want 0: per element), of 4 x 16 x 256 %d (want 2)",
                 f0, f1);
        eb_gemm_k r = {1, 0, 1, 0, 16};
        int f2 = eb_kern_small_gemm_batch_form(4, 16, 16, &r, 16, 1, 16, 1);
        EB_CHECK(f2 == 1, "batch form of 4 x 16 x 16 row-major %d (want 1)",
                 f2);
    }
    /* The vector-batch blocks: masked chunks (wb 1-17), every block of
     * up to 4 x 4 and its remainders, K in one slice or several (48 a
     * slice), each C layout. */
    static const int64_t Ws[] = {1, 3, 4, 7, 8, 9, 13, 16, 17, 64};
    static const int64_t VMs[] = {1, 2, 3, 4, 5, 6, 11, 16};
    static const int64_t VKs[] = {1, 4, 16, 48, 49, 100};
    int vv = 0;
    for (size_t i = 0; i < sizeof Ws / sizeof Ws[0]; i++)
        for (size_t m = 0; m < sizeof VMs / sizeof VMs[0]; m++)
            for (size_t n = 0; n < sizeof VMs / sizeof VMs[0]; n++, vv++)
                check_vec(Ws[i], VMs[m], VMs[n], VKs[vv % 6], vv % 3, &bseed);
    if (!eb_gemm512_usable()) {
        /* Valgrind's virtual CPU and CPUs without AVX-512F: the kernel is
         * never called there (eb_kern_small_gemm checks the same). */
        printf("test_gemm512: no AVX-512F on this CPU, kernel not run\n");
        return eb_check_done("test_gemm512");
    }
    /* The rows form: every row count of a block and its remainders
     * (1-17), one vector (masked below 8) or two (the second masked
     * below 16), K of 1 to past a line's run, w from one element to past
     * a block, tails of the pack's fours, A's w of stride 1, 3 and 4. */
    static const int64_t RNs[] = {1, 5, 8, 9, 12, 16};
    static const int64_t RKs[] = {1, 3, 16, 17, 40};
    static const int64_t RWs[] = {1, 4, 7, 64, 67};
    int rv = 0;
    for (int64_t M = 1; M <= 17; M++)
        for (size_t i = 0; i < sizeof RNs / sizeof RNs[0]; i++, rv++)
            check_vec_rows(RWs[rv % 5], M, RNs[i], RKs[rv % 5],
                           rv % 3 == 0 ? 1 : rv % 3 == 1 ? 3 : 4, &bseed);
    uint64_t seed = 7;
    /* Every row count of a block and its remainders (1-17), chunks of
     * 1-7 columns (masked), 8-32 (the last chunk, its last vector
     * shifted), 33-50 (a chunk of 24 and the rest), panels of several
     * chunks; K of 1, short, one slice, several slices (a panel of 48
     * columns holds 85 rows), past KC_MAX; A and B either way. */
    static const int64_t Ns[] = {1,  3,  7,  8,  9,  15, 16, 17, 23, 24,
                                 25, 31, 32, 33, 47, 48, 49, 50, 73, 100};
    static const int64_t Ks[] = {1, 2, 7, 64, 85, 86, 300, 600};
    int v = 0;
    for (int64_t M = 1; M <= 17; M++)
        for (size_t i = 0; i < sizeof Ns / sizeof Ns[0]; i++)
            for (size_t j = 0; j < sizeof Ks / sizeof Ks[0]; j++, v++)
                check_shape(M, Ns[i], 1, Ks[j], v % 3 == 0, v % 5 == 0,
                            &seed);
    /* A two-level K (offset tables): runs of 1 to 9, slices that end
     * inside a run. */
    static const int64_t K1s[] = {2, 3, 7, 40};
    for (int64_t M = 1; M <= 17; M += 4)
        for (size_t i = 0; i < sizeof Ns / sizeof Ns[0]; i += 3)
            for (size_t j = 0; j < sizeof K1s / sizeof K1s[0]; j++, v++)
                check_shape(M, Ns[i], K1s[j], 1 + v % 9, v % 2, v % 3 == 0,
                            &seed);
    /* Large enough for the prefetches of B's next slice (K N >= 32768)
     * and of A's rows (M K >= 4096), as in a matrix chain's steps. */
    check_shape(21, 404, 1, 480, 0, 0, &seed);
    check_shape(21, 272, 1, 330, 1, 0, &seed);
    check_shape(30, 303, 1, 490, 0, 1, &seed);
    check_shape(100, 1000, 1, 40, 0, 0, &seed);
    check_shape(64, 200, 16, 4, 0, 0, &seed);
    /* One panel with B in place and a long A (its rows prefetched in the
     * one-panel path too): str_mps's 2413 x 19 x 19, a tail row block. */
    check_shape(2413, 19, 1, 19, 0, 0, &seed);
    check_shape(1691, 19, 1, 19, 0, 0, &seed);
    /* The few-K kernel: every row count up to 12, strips of 16 columns
     * and a masked last one (1-15 left, either vector), rows of B
     * prefetched (more than 128 columns left), K of 1 to 64 in one or
     * several runs, C row-major or strided. */
    static const int64_t FNs[] = {1, 7, 8, 9, 15, 16, 17, 31, 33, 100, 301};
    static const int64_t FKs[][2] = {{1, 1}, {1, 2}, {1, 9}, {3, 9},
                                     {1, 27}, {4, 16}, {1, 64}, {64, 1}};
    int fv = 0;
    for (int64_t M = 1; M <= EB_FEW_K512_ROWS; M++)
        for (size_t i = 0; i < sizeof FNs / sizeof FNs[0]; i++, fv++)
            check_few_k(M, FNs[i], FKs[fv % 8][0], FKs[fv % 8][1], fv % 3 == 2,
                        &seed);
    /* Through eb_kern_small_gemm: row-major C, one-level K, B contiguous
     * along n is this kernel's, or the few-K kernel's for 7 to 12 rows, K
     * up to 64 and K N >= 2^16 (the same chains either way). */
    static const int64_t SG[][3] = {{21, 57, 130}, {9, 2187, 33},
                                    {12, 4099, 16}, {7, 65536, 1}};
    for (size_t g = 0; g < sizeof SG / sizeof SG[0]; g++) {
        int64_t M = SG[g][0], N = SG[g][1], K = SG[g][2];
        double *a = malloc(sizeof *a * (size_t)(M * K));
        double *b = malloc(sizeof *b * (size_t)(K * N));
        double *c = malloc(sizeof *c * (size_t)(M * N));
        if (a && b && c) {
            for (int64_t x = 0; x < M * K; x++)
                a[x] = rand_full(&seed);
            for (int64_t x = 0; x < K * N; x++)
                b[x] = rand_full(&seed);
            eb_gemm_k k = {1, 0, 1, 0, N};
            eb_kern_small_gemm(M, N, K, a, K, b, 1, &k, c, N, 1);
            int64_t wrong = 0;
            for (int64_t m = 0; m < M; m++)
                for (int64_t n = 0; n < N; n++) {
                    double ref = 0;
                    for (int64_t x = 0; x < K; x++)
                        ref = fma(a[m * K + x], b[x * N + n], ref);
                    wrong += c[m * N + n] != ref;
                }
            EB_CHECK(wrong == 0, "eb_kern_small_gemm %lld x %lld x %lld: "
                     "%lld elements differ", (long long)M, (long long)N,
                     (long long)K, (long long)wrong);
        } else {
            EB_CHECK(0, "out of memory");
        }
        free(a);
        free(b);
        free(c);
    }
    return eb_check_done("test_gemm512");
}
