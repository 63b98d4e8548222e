/* permute: the permutation engine (see permute.h). The functions that move
 * data are named eb_kern_perm_* so that profiles group them with the other
 * kernels (scripts/callgrind-window's `engine` category).
 *
 * Every size below is in bytes, so that a plan of any dtype reads and
 * writes the same runs of cache lines as float64's (the numbers in the
 * comments are float64's elements, where they were measured). */
#include "permute.h"

#include <immintrin.h>
#include <string.h>

#include "team.h"

/* Bytes each array should have inside a GENERIC tile along its own
 * innermost dims: 32 doubles are four cache lines, so a tile's runs are
 * whole lines even when they do not start on a line boundary, and each
 * page a tile touches gives it 256 bytes. (16 and 64 doubles measured the
 * same within this machine's noise on random permutations of 24 dims of
 * 2.) */
#ifndef GENERIC_RUN_BYTES
#define GENERIC_RUN_BYTES 256
#endif

/* A GENERIC copy whose arrays are far larger than the last-level cache
 * (perm_big) grows its tile along out to this many bytes: each line of
 * out is then a memory access, and on outputs whose innermost dims are
 * 2s and 3s the 256-byte run left tiles of 32 or 33 elements, their rows
 * ending in partial lines. Scratch program timing each of the suite's
 * GENERIC copies of more than 4 MiB on its own, best of 3 medians of 5:
 * gm_queen's eager 129 M-element operand 582 -> 410 ms, tensornetwork's
 * eager 4 M-element one 28.0 -> 12.6, mera open's 10.1 M and 10.0 M
 * 37.3 -> 27.3 and 37.0 -> 28.5, the others within 5%. Growing the
 * sources' runs instead changed nothing; growing out's on copies that
 * fit in the cache was within the noise or slower (mera open's 2.2 M
 * elements in rows of 56: 3.27 -> 4.03 ms). */
#ifndef GENERIC_BIG_OUT_RUN_BYTES
#define GENERIC_BIG_OUT_RUN_BYTES 512
#endif

/* Side of a TILE4 tile: 256 bytes (32 x 32 doubles, 8 KiB per array, in
 * L1 together with the other arrays' tiles). Sides of 128 bytes (16 x 16
 * doubles, as first chosen) were 7-25% slower on transposes of every
 * dtype, 512 bytes mixed (docs/engine.md, "dtypes"). */
#ifndef TILE_SIDE_BYTES
#define TILE_SIDE_BYTES 256
#endif

/* TILE4 needs both tile dims at least 64 bytes (8 doubles, two register
 * blocks): shorter ones leave more scalar edge than blocks, and the
 * GENERIC tile's offset table does better (test_permute's rank-4 to
 * rank-8 boxes of 5s and 3s: 2-3x fewer instructions). */
enum { TILE4_MIN_BYTES = 64 };

/* GENERIC plans that write at least this much (past L2 and most of L3)
 * prefetch each next tile while moving one: gm_queen's eager multiply of
 * 43 M elements by a transpose (16 dims of 3), scratch program, best of
 * 5, 3 alternating rounds: 306/302/333 -> 226/266/312 ms; prefetching x0
 * alone did nothing. */
enum { GENERIC_PF_MIN_BYTES = 4 << 20 };

/* GENERIC tiles of at most this many elements run from a table of
 * offsets built once per execution (96 KiB on the stack): one flat loop
 * instead of nested loops of two, three or five iterations. A tile grows
 * to TABLE_SMALL_MAX elements where the box fits the last-level cache,
 * to TABLE_MAX past it (perm_big): there the larger tiles each array's
 * runs ask for pay (gm_queen's eager multiply of 14 M elements whose
 * short innermost dim of 3 all three arrays share, tiles of 729 -> 2187
 * elements: 40-42 -> 30-31 ms), in the cache they do not (its trace
 * outer product of 1.6 M elements 1.31 -> 1.50 ms). */
#ifndef TABLE_MAX
#define TABLE_MAX 8192
#endif
enum { TABLE_SMALL_MAX = 2048 };

/* A RUNS run holds at most this many elements (less than four times
 * TILE_SIDE_BYTES of float32, by how choose_runs grows it). */
#ifndef RUN_BYTES
#define RUN_BYTES 1024
#endif
enum { RUN_MAX = 4 * RUN_BYTES / 4 };
/* A RUNS plan far larger than the last-level cache (perm_big) grows
 * out's run to this many bytes rather than TILE_SIDE_BYTES: each row of
 * out a tile writes is then whole lines but for its ends, and the next
 * tile along does not come back for the rest of a line. gm_queen's eager
 * operand of 129 M elements (t's runs of 27, out's of 3 x 729 doubles;
 * scratch program over eb_perm_exec, best of 3, two rounds, in a slow
 * phase of the VM where a plain copy of it took 46-48 ms): 512 bytes
 * 201-209 ms, 2048 144-149, 4096 132-137, 8192 150-153. */
#ifndef RUNS_BIG_OUT_RUN_BYTES
#define RUNS_BIG_OUT_RUN_BYTES 4096
#endif
/* t's run of a RUNS plan past the last-level cache when the longer one
 * would stop out's run short (try_runs): one cache line. */
enum { RUNS_BIG_T_RUN_BYTES = 64 };
/* RUNS tiles of a large box prefetch out's rows of the next tile only
 * when they are shorter than this (below). */
enum { RUNS_PF_OUT_MAX_BYTES = 512 };
/* Out's run holds at most twice the larger of the two (grow_orun). */
enum {
    ORUN_MAX = 2 *
               (RUNS_BIG_OUT_RUN_BYTES > TILE_SIDE_BYTES ? RUNS_BIG_OUT_RUN_BYTES
                                                         : TILE_SIDE_BYTES) /
               4
};

/* RUNS tiles repeat over out's next whole dims up to REP_BYTES (16 KiB
 * of out, in L1 with the source's rows), REP_MAX times at most. */
enum { REP_BYTES = 16384, REP_MAX = 256 };

/* ROW tiles repeat scattered rows until the source reads this many bytes
 * contiguously. */
#ifndef REP_RUN_BYTES
#define REP_RUN_BYTES 4096
#endif

/* ROW rows hold GENERIC_RUN_BYTES / 2, or ROW_MIN_ELEMS elements and
 * more than a cache line, whichever is fewer (choose_mode). */
enum { ROW_MIN_ELEMS = 16 };

/* Long rows are cut into pieces of 32 KiB of out: nothing is lost per
 * piece, and the team can split a single row (an elementwise multiply of
 * two compact arrays is one row). */
enum { ROW_BLOCK_BYTES = 32768 };

/* ROW outputs of more than STREAM_MIN_BYTES (the last-level cache is 32
 * MiB on this machine class, shared with the inputs) written in runs of at
 * least STREAM_MIN_ROW_BYTES are written with non-temporal stores: a long
 * row, or short rows that follow each other in out along the innermost
 * loop dim (row_run). A row's ends off a 32-byte boundary are written with
 * non-temporal scalar stores too, so that each line fills in the write
 * combining buffer: with ordinary stores there, rows of 27 doubles ran 4x
 * slower streamed, and gm_queen's eager multiply by a permutation in rows
 * of 81 (43 M elements) 48-50 ms against 24-25 through the cache; with
 * them 12.3 ms against 22.6 (one-step instance, eager). */
#ifndef STREAM_MIN_ROW_BYTES
#define STREAM_MIN_ROW_BYTES 4096
#endif
#define STREAM_MIN_BYTES (24.0 * 1024 * 1024)
/* A ROW tile that repeats its row (row_reps) writes out at that many
 * places in turn, each continued only by the next tile. Streamed, a row's
 * partial end lines wait in the write-combining buffers while the other
 * places are written: at more than STREAM_MAX_PLACES places rows stream
 * only from STREAM_REP_ROW_BYTES. One-step instances of gm_queen's eager
 * outer products, `plan --time --mode eager --samples 5-7`, streamed
 * against through the cache: rows of 27 at 9 places (`pv,fgdyinexhrovpq
 * sb->pvfgdyinexhroqsb`) float64 51.4-57.2 ms against 24.6-38.7,
 * complex64 57.2-59.0 against 26.4-28.2, complex128 (432-byte rows)
 * 56.3-57.4 against 49.6-51.6; rows of 81 at 3 places (`pr,hipvfgdynex
 * roqsb->prhivfgdynexoqsb`) float32 8.1-9.1 against 13.2-13.9, float64
 * 15.2-15.5 against 16.1-16.2; MERA open's eager step 17, whose GEMM's
 * 10.1 M-element output is put in place in rows of 81 at 7 places, 60.5-
 * 60.7 against 61.6 (`plan --time`, two runs each). */
#ifndef STREAM_MAX_PLACES
#define STREAM_MAX_PLACES 4
#endif
#ifndef STREAM_REP_ROW_BYTES
#define STREAM_REP_ROW_BYTES 512
#endif
/* Also when the arrays of one execution, read and written, take more than
 * STREAM_MIN_TOUCHED bytes (1.5x the last-level cache): the output's lines
 * are evicted before anything reads them again, so writing them through
 * the cache only adds the read of each line before its write. */
#ifndef STREAM_MIN_TOUCHED
#define STREAM_MIN_TOUCHED (48.0 * 1024 * 1024)
#endif

/* GENERIC copies with outputs as large write out's runs in a tile with
 * non-temporal element stores when a run holds at least this many bytes
 * (whole lines for the write combining, the run's partial end lines a
 * small part): gm_queen's eager preparation of 129 M elements (16 dims
 * of 3, out runs of 33 elements), scratch program, best of 4, 4
 * alternating rounds: 341-393 -> 244-315 ms. Multiplies did not gain:
 * gm_queen's by a transpose (the vector table) ran slower through the
 * streamed scalar table (57-62 -> 101-121 ms), its outer product of 43 M
 * elements no faster. Since big copies' runs along out grew to 512 bytes
 * (GENERIC_BIG_OUT_RUN_BYTES), runs of 528 bytes to 1 KiB are faster
 * through the cache: every GENERIC copy of more than 4 M elements in the
 * suite, scratch program, medians of 5-7, 5 alternating rounds: gm_queen's
 * eager 129 M elements 369-387 -> 312-366 ms, a 43 M one 85-130 -> 76-107,
 * 4.2 M 10.8-12.2 -> 9.7-12.2, 10.0 M 23-27 -> 19-30, 10.1 M the same;
 * only the copies with runs of 350 and 450 elements (2.8 and 3.6 KiB)
 * kept streaming's gain (12-14 against 14-21 ms). */
#ifndef GENERIC_STREAM_RUN_BYTES
#define GENERIC_STREAM_RUN_BYTES 2048
#endif

/* Below this many bytes written a job stays on one thread (waking the
 * team costs microseconds): 64 Ki doubles. */
enum { PERM_PARALLEL_MIN_BYTES = 1 << 19 };

/* The kernels' element operations: a copy by element size, or the
 * multiply of a dtype. Every kernel is instantiated once per kind (the
 * kind a compile-time constant in its body). complex64 copies are K_CP8,
 * the same code as float64's. */
enum { K_CP4, K_CP8, K_CP16, K_MF32, K_MF64, K_MC64, K_MC128, K_COUNT };

#define KIND_ES(k)                                                          \
    ((k) == K_CP4 || (k) == K_MF32 ? 4                                      \
     : (k) == K_CP16 || (k) == K_MC128 ? 16 : 8)
#define KIND_NSRC(k) ((k) <= K_CP16 ? 1 : 2)

static int perm_kind(const eb_perm *p)
{
    int es = p->es;
    if (p->nsrc == 1)
        return es == 4 ? K_CP4 : es == 16 ? K_CP16 : K_CP8;
    switch (p->dt) {
    case EB_F32: return K_MF32;
    case EB_C64: return K_MC64;
    case EB_C128: return K_MC128;
    default: return K_MF64;
    }
}

/* A size in bytes as elements of the plan's dtype (at least 1). */
static int64_t elems_of(const eb_perm *p, int64_t bytes)
{
    int64_t n = bytes / p->es;
    return n > 0 ? n : 1;
}

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

/* Is the execution far larger than the last-level cache: an output of
 * more than STREAM_MIN_BYTES, or arrays of STREAM_MIN_TOUCHED bytes or
 * more read and written? */
static int perm_big(const eb_perm *p)
{
    return (double)p->elems * p->es > STREAM_MIN_BYTES ||
           eb_perm_bytes(p) >= STREAM_MIN_TOUCHED;
}

/* GENERIC: grow the tile along array s's innermost dims until it holds
 * GENERIC_RUN_BYTES of them (GENERIC_BIG_OUT_RUN_BYTES of out for a big
 * copy). */
static void grow_tile(eb_perm *p, int s)
{
    int used[EB_MAX_RANK] = {0};
    int64_t prod = 1,
            run = elems_of(p, s == 0 && p->nsrc == 1 && perm_big(p)
                                  ? GENERIC_BIG_OUT_RUN_BYTES
                                  : GENERIC_RUN_BYTES);
    while (prod < run) {
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
        int64_t want = (run + prod - 1) / prod;
        if (p->shape[best] <= 2 * want)
            want = p->shape[best];
        /* A tile that does not fit its table runs the scalar odometer,
         * a pass per innermost row: a rank-10 box of 3s whose third array
         * took the tile from 729 to 2187 elements ran 2.9x the
         * instructions of one whose third array stops at 729. */
        if (tile_elems(p) / p->block[best] * want >
            (perm_big(p) ? TABLE_MAX : TABLE_SMALL_MAX))
            return;
        if (want > p->block[best])
            p->block[best] = want;
        prod *= want;
    }
}

/* A one-source plan whose innermost dim is unit-stride in both arrays and
 * holds 8 or 16 bytes (2 doubles, 2 or 4 floats) moves it as one element
 * of that size: the dims around it then form the tile (RUNS can transpose
 * pairs of doubles as 16-byte elements where 2-element rows would be too
 * short for any vector kernel). */
static void widen(eb_perm *p)
{
    int last = p->rank - 1;
    if (p->nsrc != 1 || last < 1 || p->stride[0][last] != 1 ||
        p->stride[1][last] != 1)
        return;
    int64_t n = p->shape[last], bytes = n * p->es;
    if (bytes != 8 && bytes != 16)
        return;
    for (int d = 0; d < last; d++)
        if (p->stride[0][d] % n || p->stride[1][d] % n)
            return;
    for (int d = 0; d < last; d++) {
        p->stride[0][d] /= n;
        p->stride[1][d] /= n;
    }
    p->es = (int)bytes;
    p->rank = last;
}

/* Add dim d whole to the tile as a repeat unless that makes more than
 * REP_MAX repeats or a tile of more than REP_BYTES of out (then 0); tile:
 * the tile's elements so far, updated. */
static int add_rep(eb_perm *p, int d, int64_t *tile)
{
    int64_t reps = 1;
    for (int k = 0; k < p->nrep; k++)
        reps *= p->shape[p->rep[k]];
    if (p->block[d] > 1 || *tile * p->shape[d] > elems_of(p, REP_BYTES) ||
        reps * p->shape[d] > REP_MAX)
        return 0;
    p->block[d] = p->shape[d];
    p->rep[p->nrep++] = d;
    *tile *= p->shape[d];
    return 1;
}

/* How the second source y of a RUNS tile is loaded, by its strides over
 * the tile: along out's run as out is (DIRECT), constant along it
 * (BCAST), or along t's run as t is (TRANS: transposed like t); -1: none
 * of these. Out's run is cut to its longest prefix (at least a vector)
 * over which y is DIRECT or BCAST if the whole is neither (an outer
 * product whose one operand is constant along out's innermost dims and
 * not beyond). A vector gather of y's elements ran slower than the
 * GENERIC table (gm_queen's eager outer product of 43 M elements, 16 dims
 * of 3: 56 -> 67 ms). */
enum {
    RUNS_DIRECT = EB_RUNS_DIRECT,
    RUNS_BCAST = EB_RUNS_BCAST,
    RUNS_TRANS = EB_RUNS_TRANS
};

static int runs_how(eb_perm *p, int y, int64_t v)
{
    int trans = 1;
    for (int k = 0; k < p->nrun; k++) {
        int d = p->run[k];
        trans = trans && p->stride[y][d] == p->stride[p->tsrc][d];
    }
    for (int how = RUNS_DIRECT; how <= RUNS_BCAST; how++) {
        int64_t n = 1;
        int k = 0;
        for (; k < p->norun; k++) {
            int d = p->orun[k];
            if (p->stride[y][d] != (how == RUNS_DIRECT ? p->stride[0][d] : 0))
                break;
            n *= p->block[d];
        }
        if (k == p->norun || (!trans && k > 0 && n >= v)) {
            for (int j = k; j < p->norun; j++)
                p->block[p->orun[j]] = 1;
            p->norun = k;
            return how;
        }
    }
    return trans ? RUNS_TRANS : -1;
}

/* RUNS: out's run grows over its innermost dims while they run on in out
 * and are neither in t's run (blocked) nor t's unit dim, whole while the
 * run stays within twice `target` elements; a dim that would pass that
 * is cut into even blocks (3 of 9, not 4, 4 and 1) that bring the run to
 * `target`, unless it already holds half of it (and need not reach
 * `target`: at_least 0). Returns the run's elements. */
static int64_t grow_orun(eb_perm *p, int t, int64_t target, int at_least)
{
    int64_t prod = 1;
    p->norun = 0;
    for (int d = p->rank - 1; d >= 0 && prod < target; d--) {
        if (p->stride[0][d] != prod || p->block[d] > 1 ||
            p->stride[t][d] == 1)
            break;
        int64_t b = p->shape[d];
        if (prod * b > 2 * target) {
            if (!at_least && 2 * prod >= target)
                break;
            int64_t need = (target + prod - 1) / prod,
                    nb = (b + need - 1) / need;
            b = at_least ? need : (b + nb - 1) / nb;
        }
        p->orun[p->norun++] = d;
        p->block[d] = b;
        prod *= b;
        if (b < p->shape[d])
            break;
    }
    return prod;
}

/* RUNS with t as the source read in runs: out's run first as long as a
 * vector (so that t's run leaves it that much), then t's dims contiguous
 * from its unit stride up (not in out's run) until they hold `want`
 * elements (the last one in part; try_runs: RUN_BYTES, or a line), then
 * out's run grown to TILE_SIDE_BYTES
 * (RUNS_BIG_OUT_RUN_BYTES past the last-level cache: gm_queen's eager
 * multiply by a transpose of 43 M elements, 16 dims of 3, scratch
 * program: out's 27 x 27 tiles of 216-byte rows 57-59 ms, 27 x 81 of
 * 648-byte rows 44-49; the transposing copy alone 32-33 -> 26-27). 0 if
 * either run is shorter than a vector, t's too long for its table, or
 * the other source loads in none of runs_how's ways. */
static int try_runs_want(eb_perm *p, int t, int64_t want)
{
    int r = p->rank;
    int64_t v = elems_of(p, 32),
            side = elems_of(p, perm_big(p) ? RUNS_BIG_OUT_RUN_BYTES
                                           : TILE_SIDE_BYTES);
    for (int d = 0; d < r; d++)
        p->block[d] = 1;
    p->nrun = p->norun = p->nrep = 0;
    p->tsrc = t;
    if (grow_orun(p, t, v, 1) < v)
        return 0;
    int64_t run = 1;
    int n = 0;
    while (run < want) {
        int d = -1;
        for (int e = 0; e < r; e++)
            if (p->block[e] == 1 && p->stride[t][e] == run)
                d = e;
        if (d < 0)
            break;
        int64_t need = (want + run - 1) / run;
        int64_t b = p->shape[d] <= 2 * need ? p->shape[d] : need;
        p->block[d] = b;
        p->run[n++] = d;
        run *= b;
        if (b < p->shape[d])
            break;
    }
    p->nrun = n;
    if (run < v || run > RUN_MAX)
        return 0;
    for (int k = 0; k < p->norun; k++)
        p->block[p->orun[k]] = 1;
    if (grow_orun(p, t, side, 0) < v)
        return 0;
    p->how = p->nsrc == 2 ? runs_how(p, 3 - t, v) : RUNS_DIRECT;
    return p->how >= 0;
}

/* Elements of the tile's blocks along dims[0 .. n): a RUNS tile's run of
 * out (orun, norun) or of t (run, nrun). */
static int64_t blocks_of(const eb_perm *p, const int *dims, int n)
{
    int64_t e = 1;
    for (int k = 0; k < n; k++)
        e *= p->block[dims[k]];
    return e;
}

/* try_runs_want with t's run of RUN_BYTES; past the last-level cache
 * (perm_big), where t's run then stops out's run short of
 * RUNS_BIG_OUT_RUN_BYTES (a dim of t's run is one of out's innermost),
 * t's run of RUNS_BIG_T_RUN_BYTES instead if that lets out's run grow
 * longer in a tile no smaller: many short rows of t, a line each, and
 * long rows of out, as a big 2-D transpose moves fastest (6561^2
 * doubles, scratch program: 32 x 32 tiles 68-72 ms, 64 x 64 63, 512 x 8
 * (rows of out 4 KiB, of t one line) 44-50, 16 x 256 (out's rows short)
 * 83-86; memcpy 27-30). gm_queen's eager multiply by a transpose of 43 M
 * elements, 16 dims of 3 (t's run of 27, out's of 81 -> 9 and 729):
 * 102-107 -> 79-83 ms; the transposing copy alone 68-71 -> 51-63. A
 * tile no smaller: trading t's run of 128 for 8 to double out's run of 4
 * is not the 2-D transpose's trade. */
static int try_runs(eb_perm *p, int t)
{
    if (!try_runs_want(p, t, elems_of(p, RUN_BYTES)))
        return 0;
    int64_t orun = blocks_of(p, p->orun, p->norun);
    if (!perm_big(p) || orun >= elems_of(p, RUNS_BIG_OUT_RUN_BYTES))
        return 1;
    eb_perm q = *p;
    if (!try_runs_want(&q, t, elems_of(&q, RUNS_BIG_T_RUN_BYTES)))
        return 1;
    int64_t qorun = blocks_of(&q, q.orun, q.norun);
    if (qorun > orun && qorun * blocks_of(&q, q.run, q.nrun) >=
                            orun * blocks_of(p, p->run, p->nrun))
        *p = q;
    return 1;
}

/* RUNS: the first source that works as t. Short dims next to out's run
 * (2s, 4s, 8s) would make tiles of a few hundred bytes, each a pass of
 * the loop nest: the tile repeats over them whole, from a table of
 * offsets, up to REP_BYTES. */
static int choose_runs(eb_perm *p)
{
    int t = 1;
    while (t <= p->nsrc && !try_runs(p, t))
        t++;
    if (t > p->nsrc) {
        for (int d = 0; d < p->rank; d++)
            p->block[d] = 1;
        p->nrun = p->norun = 0;
        p->tsrc = 0;
        return 0;
    }
    p->mode = EB_PERM_RUNS;
    /* A copy's tiles follow t, as GENERIC's follow x0 (gm_queen's eager
     * operand of 129 M elements, 17 dims of 3, scratch program, best of
     * 5: 124 ms in out's order, 83 in x0's); a multiply's follow out's
     * (x0's or out's 62 ms, t's 68 on its multiply by a transpose of 43 M
     * elements; 15.6 against 19.3 on an outer product of 14 M). */
    p->loop_src = p->nsrc == 1;
    int64_t tile = tile_elems(p);
    for (int d = p->rank - 1; d >= 0; d--)
        if (p->block[d] == 1 && !add_rep(p, d, &tile))
            break;
    return 1;
}

/* ROW rows (whole) that a source reads at scattered places (its next dim
 * in out's order does not continue the row: gm_queen's rows of 27 doubles
 * each a DRAM latency away): the tile repeats the row over that source's
 * own next contiguous dims until the source reads REP_RUN_BYTES in a row.
 * Out's rows are then written at a few dozen places at once, each
 * continued by the next tile. */
static void row_reps(eb_perm *p, int s)
{
    int r = p->rank, dout = r - 1;
    int64_t run = p->shape[dout], tile = tile_elems(p);
    if (r < 2 || p->stride[s][dout] != 1 || p->stride[s][r - 2] == run)
        return;
    while (run < elems_of(p, REP_RUN_BYTES)) {
        int d = -1;
        for (int e = 0; e < dout; e++)
            if (p->stride[s][e] == run)
                d = e;
        if (d < 0 || !add_rep(p, d, &tile))
            return;
        run *= p->shape[d];
    }
}

/* A TILE4 tile whose two dims are whole and short (mera's 8 x 9: a
 * 64-byte row of the transposed source t per out row, each a DRAM
 * latency away, 2.5 GB/s) repeats over t's next contiguous dims while
 * add_rep allows: t is then read in one run of the tile's size and the
 * next tile continues it. */
static void tile4_reps(eb_perm *p, int t)
{
    int64_t run = 1, tile = tile_elems(p);
    for (;;) {
        int d = -1;
        for (int e = 0; e < p->rank; e++)
            if (p->stride[t][e] == run)
                d = e;
        if (d < 0 || (p->block[d] > 1 && p->block[d] < p->shape[d]))
            return;
        if (p->block[d] == 1 && !add_rep(p, d, &tile))
            return;
        run *= p->shape[d];
    }
}

/* Can the non-transposed source o be loaded in 4 x 4 blocks of (di, do)
 * with whole runs: along do, constant along do, or along di? */
static int tile4_other_ok(const eb_perm *p, int o, int di, int dout)
{
    int64_t so = p->stride[o][dout];
    return so == 0 || so == 1 || p->stride[o][di] == 1;
}

/* Repeats a tile of `tile` elements contiguous in out over out's next
 * whole dims (add_rep) while they continue it; returns the elements a
 * pass then moves. */
static int64_t out_reps(eb_perm *p, int64_t tile)
{
    int64_t run = tile;
    for (;;) {
        int d = -1;
        for (int e = 0; e < p->rank; e++)
            if (p->stride[0][e] == run && p->block[e] == 1)
                d = e;
        if (d < 0 || !add_rep(p, d, &tile))
            return tile;
        run *= p->shape[d];
    }
}

/* XROW: out's innermost dim (R elements, too short for ROW) and the next
 * one (n) are rows of out; source e (tsrc) is constant along the first
 * and contiguous along the second (an outer product's operand broadcast
 * over the other's short free dims), the other source, if any, laid out
 * as out. Each element of e is expanded over R in registers. The vector
 * kernels move 8-byte elements (float64 multiplies, 8-byte copies);
 * other kinds keep their plans. */
static int try_xrow(eb_perm *p)
{
    int r = p->rank, dout = r - 1, di = r - 2;
    if (r < 2 || p->es != 8 || (p->nsrc == 2 && p->dt != EB_F64))
        return 0;
    int64_t R = p->shape[dout], n = p->shape[di];
    if (R < 2 || R >= elems_of(p, GENERIC_RUN_BYTES / 2) || n < 4 ||
        p->stride[0][dout] != 1 || p->stride[0][di] != R)
        return 0;
    int e = 0;
    for (int s = 1; s <= p->nsrc; s++)
        if (p->stride[s][dout] == 0 && p->stride[s][di] == 1)
            e = s;
    if (!e)
        return 0;
    if (p->nsrc == 2 &&
        (p->stride[3 - e][dout] != 1 || p->stride[3 - e][di] != R))
        return 0;
    p->mode = EB_PERM_XROW;
    p->tsrc = e;
    p->block[dout] = R;
    int64_t rb = elems_of(p, ROW_BLOCK_BYTES) / R / 4 * 4;
    p->block[di] = n <= 2 * rb ? n : rb;
    if (p->block[di] == n)
        out_reps(p, n * R);
    return 1;
}

/* PROW: out's innermost dim (P elements, too short for ROW) and the next
 * one (n) are rows of out; source y (tsrc) is contiguous along the first
 * and constant along the second, the other laid out as out: out[i P + f]
 * = y[f] c[i P + f]. gm_queen's outer products of 2 M to 14 M elements
 * whose operands share the innermost label (x, 3) ran as GENERIC tiles,
 * three table entries and a scalar multiply per element (its
 * qhiongbefx,shryongedvx->qshriyongbefdvx, one-step instance: 11.2 ms;
 * a scratch loop over rows of 27 with y's period in registers 5.3-5.7).
 * Float64 multiplies only (the kernel's vectors). */
enum { PROW_MAX_P = 7, PROW_MIN_TILE = 64 };

static int try_prow(eb_perm *p)
{
    int r = p->rank, dout = r - 1, di = r - 2;
    if (r < 2 || p->nsrc != 2 || p->es != 8 || p->dt != EB_F64)
        return 0;
    int64_t P = p->shape[dout], n = p->shape[di];
    if (P < 2 || P > PROW_MAX_P || P >= elems_of(p, GENERIC_RUN_BYTES / 2) ||
        n * P < 8 || p->stride[0][dout] != 1 || p->stride[0][di] != P)
        return 0;
    int y = 0;
    for (int s = 1; s <= 2; s++)
        if (p->stride[s][dout] == 1 && p->stride[s][di] == 0)
            y = s;
    int c = 3 - y;
    if (!y || p->stride[c][dout] != 1 || p->stride[c][di] != P)
        return 0;
    /* A dim along which out and c run on (y at any stride) gives the
     * kernel more rows a call: gm_queen's rows of 9 (3 x 3) over a dim
     * of 729, a pass of the loop nest each, took twice GENERIC's time. */
    int64_t row = n * P, rb = elems_of(p, ROW_BLOCK_BYTES);
    int d3 = -1;
    for (int e = 0; e < di; e++)
        if (p->stride[0][e] == row && p->stride[c][e] == row)
            d3 = e;
    p->mode = EB_PERM_PROW;
    p->tsrc = y;
    p->di = d3;
    p->block[dout] = P;
    if (row > rb) {
        p->block[di] = rb / P;
        return 1;
    }
    p->block[di] = n;
    if (d3 >= 0) {
        p->block[d3] = p->shape[d3] * row <= 2 * rb ? p->shape[d3] : rb / row;
        if (p->block[d3] < p->shape[d3])
            return 1;
        row *= p->shape[d3];
    }
    /* Whole tiles repeat over out's next contiguous dims (a pass of the
     * loop nest per row of 27 cost more than the row: 17 ms against
     * GENERIC's 10 on gm_queen's step). */
    int64_t tile = out_reps(p, row);
    if (tile >= PROW_MIN_TILE)
        return 1;
    for (int e = 0; e < r; e++) /* too few elements a pass: not PROW */
        p->block[e] = 1;
    p->nrep = 0;
    p->di = 0;
    p->tsrc = 0;
    p->mode = EB_PERM_GENERIC;
    return 0;
}

/* Can an XROW plan's rows be written with aligned non-temporal stores:
 * R of 2 or 3 (groups of 4 elements of e make whole vectors of out) or a
 * multiple of 4 (no overlapping stores)? */
static int xrow_streams(int64_t R)
{
    return R == 2 || R == 3 || R % 4 == 0;
}

static void choose_mode(eb_perm *p)
{
    int r = p->rank, dout = r - 1;
    for (int d = 0; d < r; d++)
        p->block[d] = 1;
    /* Rows shorter than a GENERIC run would cost a pass of the loop nest
     * for every few elements (callgrind on tensornetwork_permutation_light,
     * eager: rows of 2 and 4 made the engine 2.5x the old kernel's
     * instructions); the GENERIC tile takes several of them at once. A
     * row of ROW_MIN_ELEMS elements that spans more than one cache line
     * is long enough in any dtype (float32, paired runs, --dtype float32:
     * gm_queen's eager outer product in rows of 27 floats, step 79 as a
     * one-step instance, 38.8-40.0 ms in RUNS tiles, 16.3-17.5 as rows;
     * str_mps eager in rows of 19 0.849 [0.712, 0.970] and 0.777 [0.710,
     * 1.004]; in rows of 16 floats, one line each, lm sentence_4_4d eager
     * 1.372 [1.109, 1.534] and 1.046 [0.962, 1.272], brackets_4_4d 1.114
     * [0.936, 1.365]: not faster, left to GENERIC). */
    int64_t row_min = elems_of(p, 64) + 1;
    if (row_min < ROW_MIN_ELEMS)
        row_min = ROW_MIN_ELEMS;
    if (row_min > elems_of(p, GENERIC_RUN_BYTES / 2))
        row_min = elems_of(p, GENERIC_RUN_BYTES / 2);
    int row = p->shape[dout] >= row_min;
    for (int s = 1; s <= p->nsrc; s++)
        row = row && (p->stride[s][dout] == 0 || unit_dim(p, s) == dout);
    if (row) {
        p->mode = EB_PERM_ROW;
        int64_t rb = elems_of(p, ROW_BLOCK_BYTES);
        p->block[dout] = p->shape[dout] <= 2 * rb ? p->shape[dout] : rb;
        if (p->block[dout] == p->shape[dout])
            for (int s = 1; s <= p->nsrc; s++)
                row_reps(p, s);
        return;
    }
    if (try_xrow(p) || try_prow(p))
        return;
    int64_t tmin = elems_of(p, TILE4_MIN_BYTES),
            side = elems_of(p, TILE_SIDE_BYTES);
    for (int t = 1; t <= p->nsrc; t++) {
        int di = unit_dim(p, t);
        if (di < 0 || di == dout || p->stride[t][di] != 1 ||
            p->stride[t][dout] == 0 || p->stride[0][dout] != 1 ||
            p->shape[di] < tmin || p->shape[dout] < tmin)
            continue;
        if (p->nsrc == 2 && !tile4_other_ok(p, 3 - t, di, dout))
            continue;
        p->mode = EB_PERM_TILE4;
        p->tsrc = t;
        p->di = di;
        p->block[di] = p->shape[di] < side ? p->shape[di] : side;
        p->block[dout] = p->shape[dout] < side ? p->shape[dout] : side;
        tile4_reps(p, t);
        return;
    }
    if (choose_runs(p))
        return;
    p->mode = EB_PERM_GENERIC;
    for (int s = 0; s <= p->nsrc; s++)
        grow_tile(p, s);
    /* A copy's tiles follow the source: each tile's runs of x0 continue
     * the last tile's, out's start anew (gm_queen's eager operand of 129 M
     * elements, 17 dims of 3: 564-716 -> 422-488 ms). A multiply keeps
     * out's order, which x1 often shares (two arrays continued: its step
     * 78 ran 265-286 -> 313-388 ms in x0's order). */
    p->loop_src = p->nsrc == 1;
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

/* Elements of a tile's run along out: its innermost dims while each
 * one's stride is the product of the blocks inside it. */
static int64_t out_run(const eb_perm *p)
{
    int64_t run = 1;
    for (int d = p->rank - 1; d >= 0 && p->stride[0][d] == run; d--)
        run *= p->block[d];
    return run;
}

/* ROW: elements of out that consecutive rows write one after another:
 * the row, times the innermost loop dim's extent when its out stride
 * continues the row (a repeat inside the tile writes its own such run). */
static int64_t row_run(const eb_perm *p)
{
    int last = p->rank - 1;
    int64_t run = p->shape[last];
    for (int d = last - 1; d >= 0; d--) {
        if (p->block[d] >= p->shape[d])
            continue;
        if (p->stride[0][d] == run)
            run *= p->shape[d];
        break;
    }
    return run;
}

/* ROW: may a tile that writes out at several places (its repeats) stream
 * (STREAM_MAX_PLACES)? */
static int row_places_stream(const eb_perm *p)
{
    int64_t places = 1;
    for (int k = 0; k < p->nrep; k++)
        places *= p->shape[p->rep[k]];
    return places <= STREAM_MAX_PLACES ||
           p->shape[p->rank - 1] >= elems_of(p, STREAM_REP_ROW_BYTES);
}

void eb_perm_plan_dt(eb_perm *p, eb_dtype dt, int rank, const int64_t *shape,
                     const int64_t *out_stride, const int64_t *x0_stride,
                     const int64_t *x1_stride)
{
    static const int64_t zeros[EB_MAX_RANK];
    memset(p, 0, sizeof *p);
    p->dt = dt;
    p->es = (int)eb_dtype_size(dt);
    p->nsrc = x1_stride ? 2 : 1;
    const int64_t *st[3] = {out_stride, x0_stride,
                            x1_stride ? x1_stride : zeros};
    simplify(p, rank, shape, st);
    widen(p);
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
    p->stream = perm_big(p) && ((p->mode == EB_PERM_ROW &&
                         row_run(p) >= elems_of(p, STREAM_MIN_ROW_BYTES) &&
                         row_places_stream(p)) ||
                        (p->mode == EB_PERM_XROW &&
                         xrow_streams(p->shape[p->rank - 1]) &&
                         p->shape[p->rank - 1] * p->shape[p->rank - 2] >=
                             elems_of(p, STREAM_MIN_ROW_BYTES)) ||
                        (p->mode == EB_PERM_GENERIC && p->nsrc == 1 &&
                         out_run(p) * p->es >= GENERIC_STREAM_RUN_BYTES));
}

void eb_perm_plan(eb_perm *p, int rank, const int64_t *shape,
                  const int64_t *out_stride, const int64_t *x0_stride,
                  const int64_t *x1_stride)
{
    eb_perm_plan_dt(p, EB_F64, rank, shape, out_stride, x0_stride, x1_stride);
}

double eb_perm_src_elems(const eb_perm *p, int src)
{
    double n = 1;
    for (int d = 0; d < p->rank; d++)
        if (p->stride[src + 1][d])
            n *= (double)p->shape[d];
    return n;
}

double eb_perm_bytes(const eb_perm *p)
{
    double bytes = (double)p->elems;
    for (int s = 0; s < p->nsrc; s++)
        bytes += eb_perm_src_elems(p, s);
    return bytes * p->es;
}

void eb_perm_prefetch(const eb_perm *p, int src, const void *x)
{
    /* The source's dims by increasing stride; those of unit stride and
     * on, each stride the product of the ones inside, make one run. */
    const int64_t *st = p->stride[src ? 2 : 1];
    int ord[EB_MAX_RANK], n = 0;
    for (int d = 0; d < p->rank; d++) {
        if (st[d] <= 0 || p->shape[d] < 2)
            continue;
        int at = n++;
        for (; at > 0 && st[ord[at - 1]] > st[d]; at--)
            ord[at] = ord[at - 1];
        ord[at] = d;
    }
    int64_t run = 1;
    int q = 0;
    for (; q < n && st[ord[q]] == run; q++)
        run *= p->shape[ord[q]];
    int64_t bytes = run * p->es, idx[EB_MAX_RANK] = {0}, off = 0;
    const char *xs = x;
    for (;;) {
        for (int64_t b = 0; b < bytes; b += 64)
            __builtin_prefetch(xs + off * p->es + b, 0, 2);
        __builtin_prefetch(xs + off * p->es + bytes - 1, 0, 2);
        int d = n - 1;
        for (; d >= q; d--) {
            off += st[ord[d]];
            if (++idx[d] < p->shape[ord[d]])
                break;
            off -= st[ord[d]] * p->shape[ord[d]];
            idx[d] = 0;
        }
        if (d < q)
            return;
    }
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

/* One element of kind k: o = a, or o = a * b (complex: (ac - bd) + (ad +
 * bc)i, each product rounded once, as the vector kernels do: the build is
 * ISO C, so no multiply-add is contracted). */
__attribute__((always_inline)) static inline void
elem(const int k, char *o, const char *a, const char *b)
{
    switch (k) {
    case K_CP4: memcpy(o, a, 4); break;
    case K_CP8: memcpy(o, a, 8); break;
    case K_CP16: memcpy(o, a, 16); break;
    case K_MF32: *(float *)o = *(const float *)a * *(const float *)b; break;
    case K_MF64:
        *(double *)o = *(const double *)a * *(const double *)b;
        break;
    case K_MC64: {
        const float *x = (const float *)a, *y = (const float *)b;
        float re = x[0] * y[0] - x[1] * y[1], im = x[0] * y[1] + x[1] * y[0];
        ((float *)o)[0] = re;
        ((float *)o)[1] = im;
        break;
    }
    default: {
        const double *x = (const double *)a, *y = (const double *)b;
        double re = x[0] * y[0] - x[1] * y[1], im = x[0] * y[1] + x[1] * y[0];
        ((double *)o)[0] = re;
        ((double *)o)[1] = im;
        break;
    }
    }
}

/* elem with a non-temporal store of the result (movnti: any alignment,
 * baseline x86-64, no vector unit needed). */
__attribute__((always_inline)) static inline void
elem_nt(const int k, char *o, const char *a, const char *b)
{
    char r[16];
    elem(k, r, a, b);
    if (KIND_ES(k) == 4) {
        int v;
        memcpy(&v, r, 4);
        _mm_stream_si32((int *)o, v);
        return;
    }
    long long v[2];
    memcpy(v, r, (size_t)KIND_ES(k));
    _mm_stream_si64((long long *)o, v[0]);
    if (KIND_ES(k) == 16)
        _mm_stream_si64((long long *)o + 1, v[1]);
}

/* elem, with a non-temporal store when nt. */
__attribute__((always_inline)) static inline void
elem_st(const int nt, const int k, char *o, const char *a, const char *b)
{
    if (nt)
        elem_nt(k, o, a, b);
    else
        elem(k, o, a, b);
}

/* The tile at offsets off[] with extents ext[] along its dims td[0..nt-1]
 * (outermost first; the last is out's innermost dim), scalar. */
__attribute__((always_inline)) static inline void
perm_scalar(const eb_perm *p, const int *td, int nt, const int64_t *ext,
            const char *x0, const char *x1, char *out, const int k)
{
    const int64_t es = KIND_ES(k);
    int last = td[nt - 1];
    int64_t n = ext[last], so = p->stride[0][last] * es,
            s0 = p->stride[1][last] * es, s1 = p->stride[2][last] * es;
    int64_t idx[EB_MAX_RANK];
    for (int q = 0; q < nt; q++)
        idx[q] = 0;
    int64_t off[3] = {0, 0, 0};
    do {
        char *restrict w = out + off[0] * es;
        const char *a = x0 + off[1] * es, *b = x1 + off[2] * es;
        for (int64_t j = 0; j < n; j++)
            elem(k, w + j * so, a + j * s0, b + j * s1);
    } while (odometer_next(p, td, nt - 1, ext, idx, off));
}

/* ---- vectors of any kind ------------------------------------------------ */

/* A vector holds 32 bytes of any kind: 4 doubles, 8 floats, 2 complex128,
 * 4 complex64 (__m256d only names the register). */
__attribute__((target("avx2"), always_inline)) static inline __m256d
vload(const char *x)
{
    return _mm256_loadu_pd((const double *)x);
}

/* One element of kind k at x in every slot. */
__attribute__((target("avx2"), always_inline)) static inline __m256d
vbcast(const int k, const char *x)
{
    if (KIND_ES(k) == 4)
        return _mm256_castps_pd(_mm256_broadcast_ss((const float *)x));
    if (KIND_ES(k) == 16)
        return _mm256_broadcast_pd((const __m128d *)x);
    return _mm256_broadcast_sd((const double *)x);
}

/* The multiply of kind k, slot by slot. Complex: a * re(b) and swap(a) *
 * im(b), then one subtracts in the real slots and adds in the imaginary
 * ones: the same two roundings per part as elem(). */
__attribute__((target("avx2"), always_inline)) static inline __m256d
vmul(const int k, __m256d a, __m256d b)
{
    if (k == K_MF32)
        return _mm256_castps_pd(
            _mm256_mul_ps(_mm256_castpd_ps(a), _mm256_castpd_ps(b)));
    if (k == K_MC128) {
        __m256d re = _mm256_movedup_pd(b), im = _mm256_permute_pd(b, 0xf);
        __m256d sw = _mm256_permute_pd(a, 0x5);
        return _mm256_addsub_pd(_mm256_mul_pd(a, re), _mm256_mul_pd(sw, im));
    }
    if (k == K_MC64) {
        __m256 fa = _mm256_castpd_ps(a), fb = _mm256_castpd_ps(b);
        __m256 re = _mm256_moveldup_ps(fb), im = _mm256_movehdup_ps(fb);
        __m256 sw = _mm256_permute_ps(fa, 0xb1);
        return _mm256_castps_pd(
            _mm256_addsub_ps(_mm256_mul_ps(fa, re), _mm256_mul_ps(sw, im)));
    }
    return _mm256_mul_pd(a, b);
}

/* Store one vector of out: non-temporal (nt, out aligned) or not. */
#define EB_STORE(ptr, v)                                                    \
    (nt ? _mm256_stream_pd((double *)(ptr), (v))                            \
        : _mm256_storeu_pd((double *)(ptr), (v)))

/* Elements [j, n) of a multiply row: x0 along it times x1 along it or
 * (bc) x1[0]. Four vectors a pass, as the contiguous multiply has always
 * been (bin_elementwise_mul: 3.9 M instructions a sample against 6.5 M for
 * two vectors a pass). */
__attribute__((target("avx2"), always_inline)) static inline void
mul_row(int64_t j, int64_t n, const char *x0, const char *x1, char *out,
        const int nt, const int k, const int bc)
{
    const int64_t es = KIND_ES(k), v = 32 / KIND_ES(k), n4 = n - 4 * v;
    const int64_t s1 = bc ? 0 : es;
    __m256d c1 = vbcast(k, x1);
    for (; j <= n4; j += 4 * v) {
        __m256d b0 = bc ? c1 : vload(x1 + j * es);
        __m256d b1 = bc ? c1 : vload(x1 + (j + v) * es);
        __m256d b2 = bc ? c1 : vload(x1 + (j + 2 * v) * es);
        __m256d b3 = bc ? c1 : vload(x1 + (j + 3 * v) * es);
        __m256d a0 = vmul(k, vload(x0 + j * es), b0);
        __m256d a1 = vmul(k, vload(x0 + (j + v) * es), b1);
        __m256d a2 = vmul(k, vload(x0 + (j + 2 * v) * es), b2);
        __m256d a3 = vmul(k, vload(x0 + (j + 3 * v) * es), b3);
        EB_STORE(out + j * es, a0);
        EB_STORE(out + (j + v) * es, a1);
        EB_STORE(out + (j + 2 * v) * es, a2);
        EB_STORE(out + (j + 3 * v) * es, a3);
    }
    for (; j + v <= n; j += v)
        EB_STORE(out + j * es,
                 vmul(k, vload(x0 + j * es), bc ? c1 : vload(x1 + j * es)));
    for (; j < n; j++)
        elem_st(nt, k, out + j * es, x0 + j * es, x1 + j * s1);
}

/* One row of n elements of kind k with unit stride in out: x0 along the
 * row with stride s0 in {0, 1}, times x1 with s1 in {0, 1} (two sources).
 * nt: with non-temporal stores, after a scalar head up to a 32-byte
 * boundary (for outputs larger than the last-level cache, whose lines
 * would otherwise be read before they are written). */
__attribute__((target("avx2"), always_inline)) static inline void
row_body(int64_t n, const char *x0, int64_t s0, const char *x1, int64_t s1,
         char *out, const int nt, const int k)
{
    const int64_t es = KIND_ES(k), v = 32 / KIND_ES(k);
    const int nsrc = KIND_NSRC(k);
    if (nsrc == 2 && s0 == 0 && s1 == 1) {
        /* Every kind's multiply commutes exactly. */
        const char *t = x0;
        x0 = x1;
        x1 = t;
        s0 = 1;
        s1 = 0;
    }
    s0 *= es;
    s1 *= es;
    int64_t j = 0, n4 = n - 4 * v; /* bound of the 4-vector loops: j <= n4
                                    * costs one instruction less a pass
                                    * than j + 4 v <= n (callgrind,
                                    * elementwise) */
    if (nt)
        for (; j < n && ((uintptr_t)(out + j * es) & 31); j++)
            elem_nt(k, out + j * es, x0 + j * s0, x1 + j * s1);
    if (s0 == 0) {
        char c[16];
        elem(k, c, x0, x1);
        __m256d vc = vbcast(k, c);
        for (; j + v <= n; j += v)
            EB_STORE(out + j * es, vc);
        for (; j < n; j++) /* (s0 == 0: so is s1) */
            elem_st(nt, k, out + j * es, x0, x1);
        return;
    }
    if (nsrc == 1) {
        for (; j <= n4; j += 4 * v) {
            __m256d a0 = vload(x0 + j * es);
            __m256d a1 = vload(x0 + (j + v) * es);
            __m256d a2 = vload(x0 + (j + 2 * v) * es);
            __m256d a3 = vload(x0 + (j + 3 * v) * es);
            EB_STORE(out + j * es, a0);
            EB_STORE(out + (j + v) * es, a1);
            EB_STORE(out + (j + 2 * v) * es, a2);
            EB_STORE(out + (j + 3 * v) * es, a3);
        }
        for (; j + v <= n; j += v)
            EB_STORE(out + j * es, vload(x0 + j * es));
        for (; j < n; j++)
            elem_st(nt, k, out + j * es, x0 + j * es, NULL);
        return;
    }
    if (s1 == 0)
        mul_row(j, n, x0, x1, out, nt, k, 1);
    else
        mul_row(j, n, x0, x1, out, nt, k, 0);
}

#undef EB_STORE

/* Load the v x v block of kind k whose row q starts at ROW(q) (v = 32 /
 * size) transposed: afterwards r[q] holds element q of every row. One
 * body for rows from a table (vload_rows) and rows a step apart
 * (vload_t), each addressed its own way: TILE4's blocks through the
 * table's pointers cost lm's eager 4 x 4 tiles 35% more instructions. */
#define EB_VLOAD_T(ROW)                                                     \
    do {                                                                    \
        if (KIND_ES(k) == 16) {                                             \
            __m256d a_ = vload(ROW(0)), b_ = vload(ROW(1));                 \
            r[0] = _mm256_permute2f128_pd(a_, b_, 0x20);                    \
            r[1] = _mm256_permute2f128_pd(a_, b_, 0x31);                    \
        } else if (KIND_ES(k) == 8) {                                       \
            /* Row q's half h in the low lane, row q + 2's in the high one  \
             * (the loads cross the lanes), then one unpack per row. */     \
            for (int h = 0; h < 2; h++) {                                   \
                __m256d a_[2];                                              \
                for (int q = 0; q < 2; q++)                                 \
                    a_[q] = _mm256_insertf128_pd(                           \
                        _mm256_castpd128_pd256(_mm_loadu_pd(                \
                            (const double *)ROW(q) + 2 * h)),               \
                        _mm_loadu_pd((const double *)ROW(q + 2) + 2 * h),   \
                        1);                                                 \
                r[2 * h] = _mm256_unpacklo_pd(a_[0], a_[1]);                \
                r[2 * h + 1] = _mm256_unpackhi_pd(a_[0], a_[1]);            \
            }                                                               \
        } else {                                                            \
            /* 8 x 8 floats: each register takes 4 floats of row q in its  \
             * low lane and of row q + 4 in its high one (the loads do the  \
             * lane crossing), then two in-lane 4 x 4 transposes. */        \
            for (int h = 0; h < 2; h++) {                                   \
                __m256 a_[4];                                               \
                for (int q = 0; q < 4; q++)                                 \
                    a_[q] = _mm256_insertf128_ps(                           \
                        _mm256_castps128_ps256(_mm_loadu_ps(                \
                            (const float *)ROW(q) + 4 * h)),                \
                        _mm_loadu_ps((const float *)ROW(q + 4) + 4 * h),    \
                        1);                                                 \
                __m256 t0 = _mm256_unpacklo_ps(a_[0], a_[1]);               \
                __m256 t1 = _mm256_unpackhi_ps(a_[0], a_[1]);               \
                __m256 t2 = _mm256_unpacklo_ps(a_[2], a_[3]);               \
                __m256 t3 = _mm256_unpackhi_ps(a_[2], a_[3]);               \
                r[4 * h] = _mm256_castps_pd(_mm256_shuffle_ps(t0, t2, 0x44)); \
                r[4 * h + 1] =                                              \
                    _mm256_castps_pd(_mm256_shuffle_ps(t0, t2, 0xee));      \
                r[4 * h + 2] =                                              \
                    _mm256_castps_pd(_mm256_shuffle_ps(t1, t3, 0x44));      \
                r[4 * h + 3] =                                              \
                    _mm256_castps_pd(_mm256_shuffle_ps(t1, t3, 0xee));      \
            }                                                               \
        }                                                                   \
    } while (0)

__attribute__((target("avx2"), always_inline)) static inline void
vload_rows(const int k, const char *const *row, __m256d *r)
{
#define EB_ROW_TAB(q) (row[q])
    EB_VLOAD_T(EB_ROW_TAB);
#undef EB_ROW_TAB
}

__attribute__((target("avx2"), always_inline)) static inline void
vload_t(const int k, const char *x, int64_t step, __m256d *r)
{
#define EB_ROW_STEP(q) (x + (q) * step)
    EB_VLOAD_T(EB_ROW_STEP);
#undef EB_ROW_STEP
}
#undef EB_VLOAD_T

/* The other source of a TILE4 tile as v rows (one per i, v values of o):
 * by how it is laid out along (i, o). */
enum { LOAD_DIRECT, LOAD_BCAST, LOAD_TRANS };

__attribute__((target("avx2"), always_inline)) static inline void
load_other(const int k, const char *x, int64_t si, int64_t so, int how,
           __m256d *m)
{
    const int v = 32 / KIND_ES(k);
    if (how == LOAD_DIRECT) {
        for (int q = 0; q < v; q++)
            m[q] = vload(x + q * si);
    } else if (how == LOAD_BCAST) {
        for (int q = 0; q < v; q++)
            m[q] = vbcast(k, x + q * si);
    } else {
        vload_t(k, x, so, m);
    }
}

/* A TILE4 tile of ni x no elements of kind k: xt (unit stride along i,
 * stride st along o) transposed into out (stride oi along i, unit along
 * o), times xo (strides (xi, xs)) when two sources. Full v x v blocks in
 * registers (4 x 4 doubles, 8 x 8 floats, 2 x 2 complex128), the edges
 * scalar. */
__attribute__((target("avx2"), always_inline)) static inline void
tile_body(int64_t ni, int64_t no, const char *xt, int64_t st, const char *xo,
          int64_t xi, int64_t xs, char *out, int64_t oi, const int k)
{
    const int64_t es = KIND_ES(k), v = 32 / KIND_ES(k);
    const int nsrc = KIND_NSRC(k);
    int how = xs == 1 ? LOAD_DIRECT : xs == 0 ? LOAD_BCAST : LOAD_TRANS;
    st *= es;
    xi *= es;
    xs *= es;
    oi *= es;
    int64_t niv = ni / v * v, nov = no / v * v;
    for (int64_t i = 0; i < niv; i += v)
        for (int64_t o = 0; o < nov; o += v) {
            __m256d r[8];
            vload_t(k, xt + o * st + i * es, st, r);
            if (nsrc == 2) {
                __m256d m[8];
                load_other(k, xo + i * xi + o * xs, xi, xs, how, m);
                for (int q = 0; q < v; q++)
                    r[q] = vmul(k, r[q], m[q]);
            }
            for (int q = 0; q < v; q++)
                _mm256_storeu_pd((double *)(out + (i + q) * oi + o * es),
                                 r[q]);
        }
    for (int64_t i = 0; i < ni; i++)
        for (int64_t o = i < niv ? nov : 0; o < no; o++)
            elem(k, out + i * oi + o * es, xt + o * st + i * es,
                 xo + i * xi + o * xs);
}

/* The next tile's lines that a RUNS tile prefetches as it moves its own
 * (for tiles of a large box): the distance d[s] in bytes to the next
 * tile's base of out, t and y (0, 1, 2), and the byte offsets of the
 * lines of one tile's footprint in out from its base (n of them, 0: out
 * not prefetched). Rows that run on into each other or overlap (out's
 * rows of 9 that make runs of 81 over dims of t's run) are one span, so
 * each line is asked for about once (a prefetch of each row's lines asked
 * for most lines three times, at about a third of a copy's
 * instructions); band b of a tile's bands asks for the b-th share. t's
 * rows are prefetched with each block and y's along its rows with each
 * band (runs_body). */
enum { PF_LINES_MAX = 2048 };

typedef struct {
    int64_t d[3];
    int out_rows; /* 1: out's rows prefetched each on its own, no list */
    int n;
    int per; /* lines per band: n over the tile's bands, rounded up */
    int64_t line[PF_LINES_MAX];
} runs_pf;

/* Band bi's share of pf's lines of out, at out (the tile's base). */
__attribute__((always_inline)) static inline void
pf_band(const runs_pf *pf, const char *out, int64_t bi)
{
    const char *b = out + pf->d[0];
    int64_t i = bi * pf->per, e = i + pf->per;
    e = e < pf->n ? e : pf->n;
    for (; i < e; i++)
        __builtin_prefetch(b + pf->line[i], 1);
}

/* Prefetch each line of the `bytes` at p, and the line of the last one
 * (for a write when `write`). */
__attribute__((always_inline)) static inline void
prefetch_run(const char *p, int64_t bytes, const int write)
{
    for (int64_t b = 0; b < bytes; b += 64) {
        if (write)
            __builtin_prefetch(p + b, 1);
        else
            __builtin_prefetch(p + b);
    }
    if (write)
        __builtin_prefetch(p + bytes - 1, 1);
    else
        __builtin_prefetch(p + bytes - 1);
}

/* A RUNS tile of nq x no elements of kind k: t's run (nq elements
 * contiguous in t; their places in out oq[], in y yq[]) times out's run
 * (no elements contiguous in out; their places in t tx[], in y yx[]),
 * times y by `how` when two sources. Each v x v block is loaded along
 * t's run, transposed in registers and stored along out's run; a run's
 * last block overlaps the one before it (its elements are written twice,
 * with the same values), so that only runs shorter than a vector are
 * scalar. */
__attribute__((target("avx2"), always_inline)) static inline void
runs_body(int64_t nq, const int64_t *oq, const int64_t *yq, int64_t no,
          const int64_t *tx, const int64_t *yx, const char *t, const char *y,
          char *out, const runs_pf *pf, const int how, const int k)
{
    const int64_t es = KIND_ES(k), v = 32 / KIND_ES(k);
    const int nsrc = KIND_NSRC(k);
    if (nq < v || no < v) {
        for (int64_t o = 0; o < no; o++)
            for (int64_t q = 0; q < nq; q++)
                elem(k, out + (oq[q] + o) * es, t + (tx[o] + q) * es,
                     y + (yq[q] + yx[o]) * es);
        return;
    }
    /* Blocks in bands of v elements of t's run (v rows of out, each
     * written along out's run in order). */
    for (int64_t q0 = 0, bi = 0; q0 < nq; q0 += v, bi++) {
        int64_t q = q0 + v <= nq ? q0 : nq - v;
        char *orow[8];
        const char *yq_[8];
        _Pragma("GCC unroll 8")
        for (int c = 0; c < v; c++) {
            orow[c] = out + oq[q + c] * es;
            yq_[c] = y + yq[q + c] * es;
        }
        /* This band's share of the next tile's lines (a prefetch per
         * block and row cost as much as the block's moves in cache, and
         * asked for most lines several times). */
        if (pf) {
            if (pf->out_rows)
                for (int c = 0; c < v; c++)
                    prefetch_run(orow[c] + pf->d[0], no * es, 1);
            else
                pf_band(pf, out, bi);
            if (nsrc == 2 && how == RUNS_DIRECT)
                for (int c = 0; c < v; c++)
                    prefetch_run(yq_[c] + pf->d[2], no * es, 0);
        }
        for (int64_t o0 = 0; o0 < no; o0 += v) {
            int64_t o = o0 + v <= no ? o0 : no - v;
            const char *rq[8];
            _Pragma("GCC unroll 8")
            for (int c = 0; c < v; c++)
                rq[c] = t + (tx[o + c] + q) * es;
            /* t's rows (and y's read as t is) with every block: spread
             * over the tile, where a band's share at once ran slower. */
            if (pf) {
                _Pragma("GCC unroll 8")
                for (int c = 0; c < v; c++) {
                    __builtin_prefetch(rq[c] + pf->d[1]);
                    if (nsrc == 2 && how == RUNS_TRANS)
                        __builtin_prefetch(y + (yx[o + c] + q) * es +
                                           pf->d[2]);
                }
            }
            __m256d r[8];
            vload_rows(k, rq, r);
            if (nsrc == 2) {
                __m256d m[8];
                if (how == RUNS_DIRECT) {
                    _Pragma("GCC unroll 8")
                    for (int c = 0; c < v; c++)
                        m[c] = vload(yq_[c] + o * es);
                } else if (how == RUNS_BCAST) {
                    _Pragma("GCC unroll 8")
                    for (int c = 0; c < v; c++)
                        m[c] = vbcast(k, yq_[c]);
                } else {
                    _Pragma("GCC unroll 8")
                    for (int c = 0; c < v; c++)
                        rq[c] = y + (yx[o + c] + q) * es;
                    vload_rows(k, rq, m);
                }
                /* Every kind's multiply commutes exactly (row_body). */
                _Pragma("GCC unroll 8")
                for (int c = 0; c < v; c++)
                    r[c] = vmul(k, r[c], m[c]);
            }
            _Pragma("GCC unroll 8")
            for (int c = 0; c < v; c++)
                _mm256_storeu_pd((double *)(orow[c] + o * es), r[c]);
        }
    }
}

/* A RUNS tile repeated nrep times (at offsets ro[e] in out, rt[e] in t,
 * ry[e] in y). A copy's tile of one v x v block (lm's 4 x 4 blocks of
 * (l, C) in runs of 16) keeps its places in registers and loops over the
 * repeats alone: through runs_body per repeat, its loops' bookkeeping
 * cost several times the block's 12 loads and shuffles and 4 stores. */
__attribute__((target("avx2"), always_inline)) static inline void
runs_rep_body(int64_t nrep, const int64_t *ro, const int64_t *rt,
              const int64_t *ry, int64_t nq, const int64_t *oq,
              const int64_t *yq, int64_t no, const int64_t *tx,
              const int64_t *yx, const char *t, const char *y, char *out,
              const runs_pf *pf, int how, const int k)
{
    const int64_t es = KIND_ES(k), v = 32 / KIND_ES(k);
    if (KIND_NSRC(k) == 1 && nq == v && no == v) {
        int64_t oc[8], tc[8];
        _Pragma("GCC unroll 8")
        for (int c = 0; c < v; c++) {
            oc[c] = oq[c] * es;
            tc[c] = tx[c] * es;
        }
        for (int64_t e = 0; e < nrep; e++) {
            const char *b = t + rt[e] * es, *row[8];
            _Pragma("GCC unroll 8")
            for (int c = 0; c < v; c++)
                row[c] = b + tc[c];
            __m256d r[8];
            vload_rows(k, row, r);
            char *w = out + ro[e] * es;
            _Pragma("GCC unroll 8")
            for (int c = 0; c < v; c++)
                _mm256_storeu_pd((double *)(w + oc[c]), r[c]);
        }
        return;
    }
    /* how as a constant in each call: the block loop then has one load
     * path of y. */
    for (int64_t e = 0; e < nrep; e++) {
        const char *te = t + rt[e] * es, *ye = y + ry[e] * es;
        char *w = out + ro[e] * es;
        if (KIND_NSRC(k) == 1 || how == RUNS_DIRECT)
            runs_body(nq, oq, yq, no, tx, yx, te, ye, w, pf, RUNS_DIRECT, k);
        else if (how == RUNS_BCAST)
            runs_body(nq, oq, yq, no, tx, yx, te, ye, w, pf, RUNS_BCAST, k);
        else
            runs_body(nq, oq, yq, no, tx, yx, te, ye, w, pf, RUNS_TRANS, k);
    }
}

/* Element i of an XROW row, scalar: out[i R + f] = e[i] (times c[i R + f]). */
__attribute__((always_inline)) static inline void
xrow_one(int64_t i, int64_t R, const double *e, const double *c, double *o,
         const int k)
{
    for (int64_t f = 0; f < R; f++)
        elem(k, (char *)(o + i * R + f), (const char *)(e + i),
             KIND_NSRC(k) == 2 ? (const char *)(c + i * R + f) : NULL);
}

/* One product or copy of a vector of out: b (e's elements expanded) times
 * c's vector at o's place. */
#define XROW_PUT(ptr, b, cptr)                                              \
    do {                                                                    \
        __m256d xv_ = KIND_NSRC(k) == 2                                     \
                          ? _mm256_mul_pd((b), _mm256_loadu_pd(cptr))       \
                          : (b);                                            \
        if (nt)                                                             \
            _mm256_stream_pd((ptr), xv_);                                   \
        else                                                                \
            _mm256_storeu_pd((ptr), xv_);                                   \
    } while (0)

/* Elements [i, n) of an XROW row of R: groups of 4 elements of e make R
 * vectors of out for R of 2, 3 and 4 (one load, R in-register
 * permutes); longer R broadcast each element of e over R / 4 vectors and
 * one more overlapping the last (its elements written twice, the same
 * values). */
__attribute__((target("avx2"), always_inline)) static inline void
xrow_loop(int64_t i, int64_t n, int64_t R, const double *e, const double *c,
          double *o, const int nt, const int k)
{
    if (R == 2) {
        for (; i + 4 <= n; i += 4) {
            __m256d a = _mm256_loadu_pd(e + i);
            XROW_PUT(o + 2 * i, _mm256_permute4x64_pd(a, 0x50), c + 2 * i);
            XROW_PUT(o + 2 * i + 4, _mm256_permute4x64_pd(a, 0xFA),
                     c + 2 * i + 4);
        }
    } else if (R == 3) {
        for (; i + 4 <= n; i += 4) {
            __m256d a = _mm256_loadu_pd(e + i);
            XROW_PUT(o + 3 * i, _mm256_permute4x64_pd(a, 0x40), c + 3 * i);
            XROW_PUT(o + 3 * i + 4, _mm256_permute4x64_pd(a, 0xA5),
                     c + 3 * i + 4);
            XROW_PUT(o + 3 * i + 8, _mm256_permute4x64_pd(a, 0xFE),
                     c + 3 * i + 8);
        }
    } else if (R == 4) {
        for (; i + 4 <= n; i += 4) {
            __m256d a = _mm256_loadu_pd(e + i);
            XROW_PUT(o + 4 * i, _mm256_permute4x64_pd(a, 0x00), c + 4 * i);
            XROW_PUT(o + 4 * i + 4, _mm256_permute4x64_pd(a, 0x55),
                     c + 4 * i + 4);
            XROW_PUT(o + 4 * i + 8, _mm256_permute4x64_pd(a, 0xAA),
                     c + 4 * i + 8);
            XROW_PUT(o + 4 * i + 12, _mm256_permute4x64_pd(a, 0xFF),
                     c + 4 * i + 12);
        }
    } else {
        for (; i < n; i++) {
            __m256d b = _mm256_broadcast_sd(e + i);
            double *w = o + i * R;
            const double *u = c + i * R;
            int64_t f = 0;
            for (; f + 4 <= R; f += 4)
                XROW_PUT(w + f, b, u + f);
            if (f < R)
                XROW_PUT(w + R - 4, b, u + R - 4);
        }
    }
    for (; i < n; i++)
        xrow_one(i, R, e, c, o, k);
}

/* An XROW row: n elements of e, each over R elements of out (c: the other
 * source, laid out as out, or unused in a copy). With nt, whole elements
 * go scalar until out is 32-byte aligned (none can when R is 2 and out
 * is not 16-byte aligned: then no streaming), and the rest is streamed;
 * R that xrow_streams refuses is never streamed. */
__attribute__((target("avx2"), always_inline)) static inline void
xrow_body(int64_t n, int64_t R, const char *xe, const char *xc, char *out,
          const int nt, const int k)
{
    const double *e = (const double *)xe, *c = (const double *)xc;
    double *o = (double *)out;
    int64_t i = 0;
    if (nt && xrow_streams(R)) {
        for (int t = 0; t < 4 && i < n && ((uintptr_t)(o + i * R) & 31);
             t++, i++)
            xrow_one(i, R, e, c, o, k);
        if (!((uintptr_t)(o + i * R) & 31)) {
            xrow_loop(i, n, R, e, c, o, 1, k);
            _mm_sfence();
            return;
        }
    }
    xrow_loop(i, n, R, e, c, o, 0, k);
}
#undef XROW_PUT

/* The vector kernels of each kind, called through tables by kind. */
typedef void row_fn(int64_t n, const char *x0, int64_t s0, const char *x1,
                    int64_t s1, char *out);
typedef void rows_fn(int64_t nrep, const int64_t *ro, const int64_t *r0,
                     const int64_t *r1, int64_t n, const char *x0, int64_t s0,
                     const char *x1, int64_t s1, char *out);
typedef void tile_fn(int64_t ni, int64_t no, const char *xt, int64_t st,
                     const char *xo, int64_t xi, int64_t xs, char *out,
                     int64_t oi);
typedef void runs_fn(int64_t nrep, const int64_t *ro, const int64_t *rt,
                     const int64_t *ry, int64_t nq, const int64_t *oq,
                     const int64_t *yq, int64_t no, const int64_t *tx,
                     const int64_t *yx, const char *t, const char *y,
                     char *out, const runs_pf *pf, int how);

#define EB_VEC_KERNELS(K)                                                   \
    __attribute__((target("avx2"))) static void eb_kern_perm_row_avx2_##K(  \
        int64_t n, const char *x0, int64_t s0, const char *x1, int64_t s1,  \
        char *out)                                                          \
    {                                                                       \
        row_body(n, x0, s0, x1, s1, out, 0, K);                             \
    }                                                                       \
    __attribute__((target("avx2"))) static void                             \
        eb_kern_perm_row_stream_avx2_##K(int64_t n, const char *x0,         \
                                         int64_t s0, const char *x1,        \
                                         int64_t s1, char *out)             \
    {                                                                       \
        row_body(n, x0, s0, x1, s1, out, 1, K);                             \
    }                                                                       \
    __attribute__((target("avx2"))) static void eb_kern_perm_rows_avx2_##K( \
        int64_t nrep, const int64_t *ro, const int64_t *r0,                 \
        const int64_t *r1, int64_t n, const char *x0, int64_t s0,           \
        const char *x1, int64_t s1, char *out)                              \
    {                                                                       \
        const int64_t es = KIND_ES(K);                                      \
        for (int64_t e = 0; e < nrep; e++)                                  \
            row_body(n, x0 + r0[e] * es, s0, x1 + r1[e] * es, s1,           \
                     out + ro[e] * es, 0, K);                               \
    }                                                                       \
    __attribute__((target("avx2"))) static void eb_kern_perm_tile4_avx2_##K( \
        int64_t ni, int64_t no, const char *xt, int64_t st, const char *xo, \
        int64_t xi, int64_t xs, char *out, int64_t oi)                      \
    {                                                                       \
        tile_body(ni, no, xt, st, xo, xi, xs, out, oi, K);                  \
    }
EB_VEC_KERNELS(K_CP4)
EB_VEC_KERNELS(K_CP8)
EB_VEC_KERNELS(K_CP16)
EB_VEC_KERNELS(K_MF32)
EB_VEC_KERNELS(K_MF64)
EB_VEC_KERNELS(K_MC64)
EB_VEC_KERNELS(K_MC128)
#undef EB_VEC_KERNELS

#define EB_RUNS_KERNEL(K)                                                   \
    __attribute__((target("avx2"))) static void eb_kern_perm_runs_avx2_##K( \
        int64_t nrep, const int64_t *ro, const int64_t *rt,                 \
        const int64_t *ry, int64_t nq, const int64_t *oq,                   \
        const int64_t *yq, int64_t no, const int64_t *tx,                   \
        const int64_t *yx, const char *t, const char *y, char *out,         \
        const runs_pf *pf, int how)                                         \
    {                                                                       \
        runs_rep_body(nrep, ro, rt, ry, nq, oq, yq, no, tx, yx, t, y, out,  \
                      pf, how, K);                                          \
    }
EB_RUNS_KERNEL(K_CP4)
EB_RUNS_KERNEL(K_CP8)
EB_RUNS_KERNEL(K_CP16)
EB_RUNS_KERNEL(K_MF32)
EB_RUNS_KERNEL(K_MF64)
EB_RUNS_KERNEL(K_MC64)
EB_RUNS_KERNEL(K_MC128)
#undef EB_RUNS_KERNEL

/* Four float64 elements of src at the table offsets i[0..3], or at i[0]
 * onwards when contiguous (two loads of two, one insert: the 4-element
 * gather instruction cost more than the loads it replaces on this
 * machine class). */
__attribute__((target("avx2"), always_inline)) static inline __m256d
table_load4(const char *src, const int32_t *i, const int contiguous)
{
    const double *x = (const double *)src;
    if (contiguous)
        return _mm256_loadu_pd(x + i[0]);
    __m128d lo = _mm_loadh_pd(_mm_load_sd(x + i[0]), x + i[1]);
    __m128d hi = _mm_loadh_pd(_mm_load_sd(x + i[2]), x + i[3]);
    return _mm256_insertf128_pd(_mm256_castpd128_pd256(lo), hi, 1);
}

/* Prefetch a source's 4 float64 elements at the table offsets i[0..3]
 * (a line ahead's tile: p is the next tile's origin): each one where they
 * are scattered, else the first one at a line's start (line). No loop:
 * GCC 12 at -O2 deleted a prefetch-only helper's loop (prefetch_lines in
 * kernels.c). */
__attribute__((always_inline)) static inline void
table_prefetch4(const char *p, const int32_t *i, int scattered, int line)
{
    if (scattered) {
        __builtin_prefetch(p + (int64_t)i[0] * 8);
        __builtin_prefetch(p + (int64_t)i[1] * 8);
        __builtin_prefetch(p + (int64_t)i[2] * 8);
        __builtin_prefetch(p + (int64_t)i[3] * 8);
    } else if (line) {
        __builtin_prefetch(p + (int64_t)i[0] * 8);
    }
}

/* A full GENERIC tile of a float64 multiply or 8-byte copy from its
 * table whose out offsets run on without a gap for orun entries at a
 * time (out's innermost tile dims): each run is stored in vectors of 4,
 * each source read in vectors where its offsets run on too (c0, c1: in
 * every run), else element by element into a register; perm_table moves
 * one element
 * at a time (gm_queen's eager multiplies of 43 M elements by a transpose
 * in dims of 3: about 17 instructions per element). pf as in perm_table,
 * but a source that runs on with out is prefetched a line at a time and
 * the other one element by element, whichever of x0 and x1 it is
 * (perm_table's x0 one by one, x1 a line at a time left that multiply's
 * transposed operand, x1, to the hardware: 83-120 -> 56-73 ms).
 * An 8-byte copy (one source) reads x0 the same way, but decides per 4
 * entries (c4[e], table_chunks): its source runs on with out only in
 * short runs (9 doubles in a permutation of dims of 3 and 9 that the
 * plan leaves to GENERIC). */
__attribute__((target("avx2"), always_inline)) static inline void
vtable_body(int n, int orun, const int32_t *t, const char *x0,
            const char *x1, char *out, const int64_t *pf, int c0, int c1,
            const uint8_t *c4, const int k)
{
    const int32_t *to = t, *t0 = t + TABLE_MAX, *t1 = t + 2 * TABLE_MAX;
    const char *p0 = x0, *p1 = x1;
    char *po = out;
    if (pf) {
        p0 += pf[1] * 8;
        p1 += pf[2] * 8;
        po += pf[0] * 8;
    }
    for (int r = 0; r < n; r += orun) {
        double *o = (double *)out + to[r];
        int j = 0;
        for (; j + 4 <= orun; j += 4) {
            int e = r + j, r0 = KIND_NSRC(k) == 1 ? c4[e] : c0;
            if (pf) {
                /* A source's elements one by one where they are
                 * scattered, one in eight where they run on with out's
                 * (a line), and out's one in eight. */
                int line = (e & 7) < 4;
                table_prefetch4(p0, t0 + e, !r0, line);
                if (KIND_NSRC(k) == 2)
                    table_prefetch4(p1, t1 + e, !c1, line);
                if (line)
                    __builtin_prefetch(po + (int64_t)to[e] * 8, 1);
            }
            _mm256_storeu_pd(
                o + j, KIND_NSRC(k) == 1
                           ? table_load4(x0, t0 + e, r0)
                           : _mm256_mul_pd(table_load4(x0, t0 + e, c0),
                                           table_load4(x1, t1 + e, c1)));
        }
        for (; j < orun; j++) {
            int e = r + j;
            elem(k, (char *)(o + j), x0 + (int64_t)t0[e] * 8,
                 KIND_NSRC(k) == 2 ? x1 + (int64_t)t1[e] * 8 : x1);
        }
    }
}

typedef void vtable_fn(int n, int orun, const int32_t *t, const char *x0,
                       const char *x1, char *out, const int64_t *pf, int c0,
                       int c1, const uint8_t *c4);

#define EB_VTABLE_KERNEL(K)                                                 \
    __attribute__((target("avx2"))) static void                             \
        eb_kern_perm_vtable_avx2_##K(int n, int orun, const int32_t *t,     \
                                     const char *x0, const char *x1,        \
                                     char *out, const int64_t *pf, int c0,  \
                                     int c1, const uint8_t *c4)             \
    {                                                                       \
        vtable_body(n, orun, t, x0, x1, out, pf, c0, c1, c4, K);            \
    }
EB_VTABLE_KERNEL(K_CP8)
EB_VTABLE_KERNEL(K_MF64)
#undef EB_VTABLE_KERNEL

typedef void xrow_fn(int64_t n, int64_t R, const char *xe, const char *xc,
                     char *out);
#define EB_XROW_KERNELS(K)                                                  \
    __attribute__((target("avx2"))) static void eb_kern_perm_xrow_avx2_##K( \
        int64_t n, int64_t R, const char *xe, const char *xc, char *out)    \
    {                                                                       \
        xrow_body(n, R, xe, xc, out, 0, K);                                 \
    }                                                                       \
    __attribute__((target("avx2"))) static void                             \
        eb_kern_perm_xrow_stream_avx2_##K(int64_t n, int64_t R,             \
                                          const char *xe, const char *xc,   \
                                          char *out)                        \
    {                                                                       \
        xrow_body(n, R, xe, xc, out, 1, K);                                 \
    }
EB_XROW_KERNELS(K_CP8)
EB_XROW_KERNELS(K_MF64)
#undef EB_XROW_KERNELS
/* The float64 multiply and 8-byte copies (try_xrow plans no others). */
static xrow_fn *const xrow_fns[2][K_COUNT] = {
    {NULL, eb_kern_perm_xrow_avx2_K_CP8, NULL, NULL,
     eb_kern_perm_xrow_avx2_K_MF64},
    {NULL, eb_kern_perm_xrow_stream_avx2_K_CP8, NULL, NULL,
     eb_kern_perm_xrow_stream_avx2_K_MF64}};

/* PROW rows: n rows of P elements (2 <= P <= PROW_MAX_P, n P >= 4),
 * out[i P + f] = y[f] c[i P + f], out and c contiguous. The vector at
 * element j takes y's period from phase j mod P (one vector per phase,
 * loaded once); the last vector overlaps the one before it. */
__attribute__((target("avx2"), always_inline)) static inline void
prow_rows(int64_t n, const int64_t P, const double *y, const double *c,
          double *o)
{
    __m256d pat[PROW_MAX_P];
    if (P == 2 || P == 3) {
        /* y's period loaded once and turned in registers (scalar loads
         * per phase cost more than a row of 9) */
        __m256i m = _mm256_setr_epi64x(-1, -1, P == 3 ? -1 : 0, 0);
        __m256d v = _mm256_maskload_pd(y, m);
        if (P == 2) {
            pat[0] = _mm256_permute4x64_pd(v, _MM_SHUFFLE(1, 0, 1, 0));
            pat[1] = _mm256_permute4x64_pd(v, _MM_SHUFFLE(0, 1, 0, 1));
        } else {
            pat[0] = _mm256_permute4x64_pd(v, _MM_SHUFFLE(0, 2, 1, 0));
            pat[1] = _mm256_permute4x64_pd(v, _MM_SHUFFLE(1, 0, 2, 1));
            pat[2] = _mm256_permute4x64_pd(v, _MM_SHUFFLE(2, 1, 0, 2));
        }
    } else if (P == 4) {
        pat[0] = _mm256_loadu_pd(y);
    } else {
        for (int64_t ph = 0; ph < P; ph++) {
            /* (no division: a few of them cost more than the row) */
            int64_t i1 = ph + 1 < P ? ph + 1 : ph + 1 - P;
            int64_t i2 = i1 + 1 < P ? i1 + 1 : i1 + 1 - P;
            int64_t i3 = i2 + 1 < P ? i2 + 1 : i2 + 1 - P;
            pat[ph] = _mm256_set_pd(y[i3], y[i2], y[i1], y[ph]);
        }
    }
    int64_t L = n * P, j = 0, ph = 0;
    for (; j + 4 <= L; j += 4) {
        _mm256_storeu_pd(o + j, _mm256_mul_pd(_mm256_loadu_pd(c + j), pat[ph]));
        ph += 4;
        while (ph >= P)
            ph -= P;
    }
    if (j < L) {
        /* back from j (phase ph) to L - 4 */
        ph -= j - (L - 4);
        while (ph < 0)
            ph += P;
        j = L - 4;
        _mm256_storeu_pd(o + j, _mm256_mul_pd(_mm256_loadu_pd(c + j), pat[ph]));
    }
}

/* m groups of n PROW rows of P, y's at sy elements apart, out's and c's
 * after each other (P of 2 to 4 as constants: their phases in
 * registers). */
__attribute__((target("avx2"), always_inline)) static inline void
prow_groups(int64_t m, int64_t sy, int64_t n, const int64_t P,
            const double *y, const double *c, double *o)
{
    for (int64_t i = 0; i < m; i++)
        prow_rows(n, P, y + i * sy, c + i * n * P, o + i * n * P);
}

__attribute__((target("avx2"))) static void
eb_kern_perm_prow_avx2(int64_t m, int64_t sy, int64_t n, int64_t P,
                       const char *xy, const char *xc, char *out)
{
    const double *y = (const double *)xy, *c = (const double *)xc;
    double *o = (double *)out;
    if (P == 2)
        prow_groups(m, sy, n, 2, y, c, o);
    else if (P == 3)
        prow_groups(m, sy, n, 3, y, c, o);
    else if (P == 4)
        prow_groups(m, sy, n, 4, y, c, o);
    else
        prow_groups(m, sy, n, P, y, c, o);
}

#define EB_BY_KIND(pre)                                                     \
    {pre##K_CP4, pre##K_CP8, pre##K_CP16, pre##K_MF32, pre##K_MF64,         \
     pre##K_MC64, pre##K_MC128}
static row_fn *const row_fns[2][K_COUNT] = {
    EB_BY_KIND(eb_kern_perm_row_avx2_),
    EB_BY_KIND(eb_kern_perm_row_stream_avx2_)};
static tile_fn *const tile_fns[K_COUNT] = EB_BY_KIND(eb_kern_perm_tile4_avx2_);
static rows_fn *const rows_fns[K_COUNT] = EB_BY_KIND(eb_kern_perm_rows_avx2_);
/* The float64 multiply and 8-byte copies (NULL: the scalar table). */
static vtable_fn *const vtable_fns[K_COUNT] = {
    NULL, eb_kern_perm_vtable_avx2_K_CP8, NULL, NULL,
    eb_kern_perm_vtable_avx2_K_MF64};
static runs_fn *const runs_fns[K_COUNT] = EB_BY_KIND(eb_kern_perm_runs_avx2_);

/* The offsets in out, x0 and x1 (ro[s]) of a tile's repeats; returns
 * their count. */
static int64_t rep_offsets(const eb_perm *p, int64_t (*ro)[REP_MAX])
{
    int64_t n = 1;
    for (int s = 0; s < 3; s++)
        ro[s][0] = 0;
    for (int k = 0; k < p->nrep; k++) {
        int d = p->rep[k];
        for (int64_t i = 1; i < p->shape[d]; i++)
            for (int64_t e = 0; e < n; e++)
                for (int s = 0; s < 3; s++)
                    ro[s][i * n + e] = ro[s][e] + i * p->stride[s][d];
        n *= p->shape[d];
    }
    return n;
}

/* Offsets in arrays s and u of the elements of a RUNS run over dims
 * dims[0..n-1] (the first fastest) with extents ext[]; returns their
 * count. */
static int64_t run_offsets(const eb_perm *p, const int *dims, int n,
                           const int64_t *ext, int s, int u, int64_t *os,
                           int64_t *ou)
{
    int64_t cnt = 1;
    os[0] = ou[0] = 0;
    for (int k = 0; k < n; k++) {
        int d = dims[k];
        for (int64_t i = 1; i < ext[d]; i++)
            for (int64_t e = 0; e < cnt; e++) {
                os[i * cnt + e] = os[e] + i * p->stride[s][d];
                ou[i * cnt + e] = ou[e] + i * p->stride[u][d];
            }
        cnt *= ext[d];
    }
    return cnt;
}

/* ---- execution ---------------------------------------------------------- */

/* Offsets of a full GENERIC tile's elements in out, x0 and x1, in out's
 * order; returns the element count (0: no table, the tile is too large). */
static int build_table(const eb_perm *p, const int *td, int nt,
                       const int64_t *ext, int32_t *t)
{
    int64_t n = 1;
    for (int k = 0; k < nt; k++)
        n *= ext[td[k]];
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
        odometer_next(p, td, nt, ext, idx, off);
    }
    return (int)n;
}

/* Entries of a GENERIC tile's table (out's order) that are contiguous in
 * out: the product of the tile's innermost blocks along which out's
 * strides run on without a gap. */
static int table_orun(const eb_perm *p, const int *td, int nt)
{
    int64_t run = 1;
    for (int q = nt - 1; q >= 0 && p->stride[0][td[q]] == run; q--)
        run *= p->block[td[q]];
    return (int)run;
}

/* Do array s's offsets in the table (n entries, out's runs of orun) also
 * run on without a gap within each run? */
static int table_contiguous(const int32_t *t, int s, int n, int orun)
{
    const int32_t *ts = t + s * TABLE_MAX;
    for (int r = 0; r < n; r += orun)
        for (int j = 1; j < orun; j++)
            if (ts[r + j] != ts[r] + j)
                return 0;
    return 1;
}

/* c4[e]: do x0's offsets run on for the 4 entries from e (within out's
 * runs of orun entries)? 1 if at least half of the tile's vectors do
 * (the vector table then; the scalar table otherwise: vectors
 * assembled from single loads are no faster). */
static int table_chunks(const int32_t *t, int n, int orun, uint8_t *c4)
{
    const int32_t *t0 = t + TABLE_MAX;
    int runs = 0, all = 0;
    for (int r = 0; r < n; r += orun)
        for (int j = 0; j + 4 <= orun; j += 4, all++) {
            int e = r + j;
            c4[e] = t0[e + 1] == t0[e] + 1 && t0[e + 2] == t0[e] + 2 &&
                    t0[e + 3] == t0[e] + 3;
            runs += c4[e];
        }
    return all > 0 && 2 * runs >= all;
}

/* A full GENERIC tile from its table. pf (NULL: none): the offsets of
 * the next tile along the innermost loop dim, whose elements of x0 are
 * prefetched one by one as this tile's are moved, and of x1 and out one
 * in eight (they run along out's lines in the table's order). The
 * prefetching loops run 8 entries a pass, those one-in-eight prefetches
 * at its head: a test of the entry's index per element cost gm_queen's
 * eager outer product of 43 M elements (a scalar table) about 17
 * instructions an element, of which the element's own move is 7. */
__attribute__((always_inline)) static inline void
perm_table(int n, const int32_t *t, const char *x0, const char *x1,
           char *out, const int k, const int64_t *pf, int stream)
{
    const int64_t es = KIND_ES(k);
    const int32_t *to = t, *t0 = t + TABLE_MAX, *t1 = t + 2 * TABLE_MAX;
    if (!pf) {
        for (int e = 0; e < n; e++)
            elem(k, out + to[e] * es, x0 + t0[e] * es, x1 + t1[e] * es);
        return;
    }
    const char *p0 = x0 + pf[1] * es, *p1 = x1 + pf[2] * es;
    char *po = out + pf[0] * es;
    int e = 0;
    for (; e + 8 <= n; e += 8) {
        if (KIND_NSRC(k) == 2)
            __builtin_prefetch(p1 + t1[e] * es);
        if (!stream)
            __builtin_prefetch(po + to[e] * es, 1);
        const int32_t *uo = to + e, *u0 = t0 + e, *u1 = t1 + e;
        _Pragma("GCC unroll 8")
        for (int u = 0; u < 8; u++) {
            __builtin_prefetch(p0 + u0[u] * es);
            if (stream)
                elem_nt(k, out + uo[u] * es, x0 + u0[u] * es,
                        x1 + u1[u] * es);
            else
                elem(k, out + uo[u] * es, x0 + u0[u] * es, x1 + u1[u] * es);
        }
    }
    for (; e < n; e++) {
        __builtin_prefetch(p0 + t0[e] * es);
        if ((e & 7) == 0) {
            if (KIND_NSRC(k) == 2)
                __builtin_prefetch(p1 + t1[e] * es);
            if (!stream)
                __builtin_prefetch(po + to[e] * es, 1);
        }
        if (stream)
            elem_nt(k, out + to[e] * es, x0 + t0[e] * es, x1 + t1[e] * es);
        else
            elem(k, out + to[e] * es, x0 + t0[e] * es, x1 + t1[e] * es);
    }
}

/* v[i] sifted down the heap v[0, n) (largest on top). */
static void sift_i64(int64_t *v, int64_t i, int64_t n)
{
    for (int64_t c; (c = 2 * i + 1) < n; i = c) {
        if (c + 1 < n && v[c + 1] > v[c])
            c++;
        if (v[i] >= v[c])
            return;
        int64_t t = v[i];
        v[i] = v[c];
        v[c] = t;
    }
}

/* Sorts v[0, n) ascending in place (a heap sort: qsort may allocate,
 * and nothing allocates during a run). */
static void sort_i64(int64_t *v, int64_t n)
{
    for (int64_t k = n / 2; k-- > 0;)
        sift_i64(v, k, n);
    for (int64_t m = n - 1; m > 0; m--) {
        int64_t t = v[0];
        v[0] = v[m];
        v[m] = t;
        sift_i64(v, 0, m);
    }
}

/* pf's lines of out for a tile of nb bands: nrow rows of len elements
 * (of es bytes) at start[] (sorted here, in tmp), rows that run on into
 * or overlap the next one taken as one span. Where that saves less than
 * a quarter of the rows' own prefetches, out_rows instead (a list costs
 * a load per line more than the rows' loops). */
static void pf_lines(runs_pf *pf, const int64_t *start, int64_t nrow,
                     int64_t len, int64_t es, int64_t nb, int64_t *tmp)
{
    int n = 0;
    for (int64_t r = 0; r < nrow; r++)
        tmp[r] = start[r];
    sort_i64(tmp, nrow);
    for (int64_t r = 0; r < nrow && n < PF_LINES_MAX;) {
        int64_t b = tmp[r], e = b + len;
        for (r++; r < nrow && tmp[r] <= e; r++)
            e = tmp[r] + len > e ? tmp[r] + len : e;
        for (int64_t x = b * es; x < e * es && n < PF_LINES_MAX; x += 64)
            pf->line[n++] = x;
        if (n < PF_LINES_MAX)
            pf->line[n++] = e * es - 1;
    }
    int64_t rows = nrow * ((len * es + 63) / 64 + 1);
    pf->out_rows = nrow > 0 && 4 * (int64_t)n > 3 * rows;
    pf->n = pf->out_rows ? 0 : n;
    pf->per = (int)((pf->n + nb - 1) / nb);
}

/* The loop nest with the split dim limited to [lo, hi): every dim of more
 * than one block steps by its block; the tile covers the blocked dims. */
__attribute__((always_inline)) static inline void
perm_nest(const eb_perm *p, const char *x0, const char *x1, char *out,
          int64_t lo, int64_t hi, const int k)
{
    const int64_t es = KIND_ES(k);
    int r = p->rank, last = r - 1;
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
    /* Loop dims outermost first by the stride of the array the tiles
     * follow (out's order as they come). */
    for (int i = 1, f = p->loop_src; f && i < nl; i++)
        for (int j = i; j > 0 && iabs64(p->stride[f][ld[j]]) >
                                     iabs64(p->stride[f][ld[j - 1]]);
             j--) {
            int t = ld[j];
            ld[j] = ld[j - 1];
            ld[j - 1] = t;
        }
    int avx2 = !p->scalar && __builtin_cpu_supports("avx2");
    int32_t table[3 * TABLE_MAX];
    int ntab = p->mode == EB_PERM_GENERIC || !avx2
                   ? build_table(p, td, nt, p->block, table) : 0;
    /* A tile cut by a dim's end runs from a table of its own, built when
     * its extents change (a dim of 9 in blocks of 4 cut the last of
     * every three tiles of gm_queen's eager multiply by a transpose,
     * which the scalar odometer moved at about 35 instructions an
     * element). */
    int32_t etable[3 * TABLE_MAX];
    int64_t eext[EB_MAX_RANK];
    int nedge = -1;
    /* Tables whose out runs hold a vector or more run in vectors. */
    vtable_fn *vt = avx2 && ntab && !p->stream ? vtable_fns[k] : NULL;
    int orun = vt ? table_orun(p, td, nt) : 0, c0 = 0, c1 = 0;
    uint8_t c4[TABLE_MAX];
    if (orun < 4)
        vt = NULL;
    if (vt && KIND_NSRC(k) == 1) {
        /* A copy whose source runs on with out in short runs. */
        if (!table_chunks(table, ntab, orun, c4))
            vt = NULL;
    } else if (vt) {
        c0 = table_contiguous(table, 1, ntab, orun);
        c1 = KIND_NSRC(k) == 2 && table_contiguous(table, 2, ntab, orun);
        /* Only where a source runs on with out (a multiply by a
         * transpose): where neither does (an outer product, a
         * transposing copy), vectors assembled from single loads ran
         * slower than the scalar table or no faster (gm_queen's outer
         * product of 43 M elements, 111-141 -> 163-192 ms). */
        if (!c0 && !c1)
            vt = NULL;
    }
    int row = avx2 && p->mode == EB_PERM_ROW && p->stride[0][last] == 1 &&
              (p->stride[1][last] == 0 || p->stride[1][last] == 1) &&
              (p->stride[2][last] == 0 || p->stride[2][last] == 1);
    int tile4 = avx2 && p->mode == EB_PERM_TILE4;
    xrow_fn *xr = avx2 && p->mode == EB_PERM_XROW ? xrow_fns[p->stream][k]
                                                  : NULL;
    int prow = avx2 && p->mode == EB_PERM_PROW && k == K_MF64;
    int runs = avx2 && p->mode == EB_PERM_RUNS;
    int64_t oq[RUN_MAX], yq[RUN_MAX], nq = 0, qext = -1, ro[3][REP_MAX];
    int64_t tx[ORUN_MAX], yx[ORUN_MAX], no = 0, oext = -1;
    int64_t nrep = rep_offsets(p, ro);
    int lr = runs ? p->run[p->nrun - 1] : 0,
        lo_run = runs ? p->orun[p->norun - 1] : 0;
    /* GENERIC tiles of a large box prefetch the next tile (see
     * perm_table). */
    int pf = ntab && nl && p->elems * es >= GENERIC_PF_MIN_BYTES;
    int64_t pfd[3] = {0, 0, 0};
    for (int s = 0; pf && s < 3; s++)
        pfd[s] = p->block[ld[nl - 1]] * p->stride[s][ld[nl - 1]];
    int t = p->tsrc, o = 3 - t, di = p->di;
    /* RUNS tiles of a large box prefetch the next tile's lines as they
     * move this one's (in bytes; out, t, y). Out's rows only when shorter
     * than RUNS_PF_OUT_MAX_BYTES: gm_queen's eager steps, scratch
     * program, out's 72-byte rows (an outer product) 22.4 ms without,
     * 15.8 with; its 648-byte rows (a multiply by a transpose of 43 M
     * elements) 44-50 without, 48-53 with; its operand of 129 M elements
     * in rows of 1944 bytes 145 without, 199 with. */
    int rpf = runs && nl && p->elems * es >= GENERIC_PF_MIN_BYTES;
    int pf_out = 0;
    runs_pf rp;
    if (rpf) {
        int d = ld[nl - 1];
        int64_t orow = blocks_of(p, p->orun, p->norun);
        /* Out's rows only where they are short: rows of whole lines wait
         * in the store buffer, and the prefetches cost more than they
         * saved. */
        pf_out = orow * es < RUNS_PF_OUT_MAX_BYTES;
        rp.out_rows = rp.n = rp.per = 0; /* until pf_lines */
        rp.d[0] = p->block[d] * p->stride[0][d] * es;
        rp.d[1] = p->block[d] * p->stride[t][d] * es;
        rp.d[2] = p->block[d] * p->stride[3 - t][d] * es;
    }
    for (;;) {
        const char *a = x0 + off[1] * es, *b = x1 + off[2] * es;
        char *w = out + off[0] * es;
        int full = 1;
        for (int q = 0; q < nt; q++)
            full = full && ext[td[q]] == p->block[td[q]];
        if (ntab && full && vt)
            vt(ntab, orun, table, a, b, w, pf ? pfd : NULL, c0, c1, c4);
        else if (ntab && full)
            perm_table(ntab, table, a, b, w, k, pf ? pfd : NULL,
                       p->stream);
        else if (row && !p->stream && nrep > 1)
            rows_fns[k](nrep, ro[0], ro[1], ro[2], ext[last], a,
                        p->stride[1][last], b, p->stride[2][last], w);
        else if (row)
            for (int64_t e = 0; e < nrep; e++)
                row_fns[p->stream][k](ext[last], a + ro[1][e] * es,
                                      p->stride[1][last], b + ro[2][e] * es,
                                      p->stride[2][last], w + ro[0][e] * es);
        else if (prow)
            for (int64_t e = 0; e < nrep; e++)
                eb_kern_perm_prow_avx2(
                    p->di >= 0 ? ext[p->di] : 1,
                    p->di >= 0 ? p->stride[p->tsrc][p->di] : 0,
                    ext[last - 1], p->shape[last],
                    (p->tsrc == 1 ? a : b) + ro[p->tsrc][e] * es,
                    (p->tsrc == 1 ? b : a) + ro[3 - p->tsrc][e] * es,
                    w + ro[0][e] * es);
        else if (xr) {
            int e = p->tsrc;
            for (int64_t q = 0; q < nrep; q++)
                xr(ext[last - 1], p->shape[last],
                   (e == 1 ? a : b) + ro[e][q] * es,
                   (e == 1 ? b : a) + ro[3 - e][q] * es, w + ro[0][q] * es);
        } else if (runs) {
            /* Only each run's last dim has edges. */
            int renew = 0;
            if (ext[lr] != qext) {
                nq = run_offsets(p, p->run, p->nrun, ext, 0, 3 - t, oq, yq);
                qext = ext[lr];
                renew = 1;
            }
            if (ext[lo_run] != oext) {
                no = run_offsets(p, p->orun, p->norun, ext, t, 3 - t, tx,
                                 yx);
                oext = ext[lo_run];
                renew = 1;
            }
            if (rpf && pf_out && renew) {
                int64_t v = 32 / es, nb = (nq + v - 1) / v,
                        tmp[RUN_MAX];
                pf_lines(&rp, oq, nq, no, es, nb, tmp);
            }
            runs_fns[k](nrep, ro[0], ro[t], ro[3 - t], nq, oq, yq, no, tx,
                        yx, t == 1 ? a : b, t == 1 ? b : a, w,
                        rpf ? &rp : NULL, p->how);
        } else if (tile4)
            for (int64_t e = 0; e < nrep; e++) {
                const char *ra = a + ro[1][e] * es, *rb = b + ro[2][e] * es;
                tile_fns[k](ext[di], ext[last], t == 1 ? ra : rb,
                            p->stride[t][last], t == 1 ? rb : ra,
                            p->stride[o][di], p->stride[o][last],
                            w + ro[0][e] * es, p->stride[0][di]);
            }
        else if (ntab) {
            int same = nedge >= 0;
            for (int q = 0; q < nt && same; q++)
                same = eext[td[q]] == ext[td[q]];
            if (!same) {
                for (int q = 0; q < nt; q++)
                    eext[td[q]] = ext[td[q]];
                nedge = build_table(p, td, nt, ext, etable);
            }
            if (nedge > 0)
                perm_table(nedge, etable, a, b, w, k, pf ? pfd : NULL,
                           p->stream);
            else
                perm_scalar(p, td, nt, ext, a, b, w, k);
        } else
            perm_scalar(p, td, nt, ext, a, b, w, k);
        int q = nl - 1;
        for (; q >= 0; q--) {
            int d = ld[q];
            int64_t bl = p->block[d];
            pos[d] += bl;
            for (int s = 0; s < 3; s++)
                off[s] += bl * p->stride[s][d];
            if (pos[d] < end[d]) {
                ext[d] = end[d] - pos[d] < bl ? end[d] - pos[d] : bl;
                break;
            }
            for (int s = 0; s < 3; s++)
                off[s] -= (pos[d] - beg[d]) * p->stride[s][d];
            pos[d] = beg[d];
            ext[d] = end[d] - beg[d] < bl ? end[d] - beg[d] : bl;
        }
        if (q < 0)
            break;
    }
    if (p->stream && (avx2 || ntab))
        _mm_sfence(); /* streamed stores visible before the part ends */
}

typedef void nest_fn(const eb_perm *p, const char *x0, const char *x1,
                     char *out, int64_t lo, int64_t hi);

#define EB_NEST(K)                                                          \
    static void eb_kern_perm_nest_##K(                                      \
        const eb_perm *p, const char *x0, const char *x1, char *out,        \
        int64_t lo, int64_t hi)                                             \
    {                                                                       \
        perm_nest(p, x0, x1, out, lo, hi, K);                               \
    }
EB_NEST(K_CP4)
EB_NEST(K_CP8)
EB_NEST(K_CP16)
EB_NEST(K_MF32)
EB_NEST(K_MF64)
EB_NEST(K_MC64)
EB_NEST(K_MC128)
#undef EB_NEST

static nest_fn *const nests[K_COUNT] = EB_BY_KIND(eb_kern_perm_nest_);
#undef EB_BY_KIND

/* One element (a plan of rank 0). */
static void one_elem(int k, char *o, const char *a, const char *b)
{
    switch (k) {
    case K_CP4: elem(K_CP4, o, a, b); break;
    case K_CP8: elem(K_CP8, o, a, b); break;
    case K_CP16: elem(K_CP16, o, a, b); break;
    case K_MF32: elem(K_MF32, o, a, b); break;
    case K_MF64: elem(K_MF64, o, a, b); break;
    case K_MC64: elem(K_MC64, o, a, b); break;
    default: elem(K_MC128, o, a, b); break;
    }
}

typedef struct {
    const eb_perm *p;
    nest_fn *nest;
    const char *x0, *x1;
    char *out;
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
        j->nest(p, j->x0, j->x1, j->out, l, h);
}

void eb_perm_exec(const eb_perm *p, const void *x0, const void *x1,
                  void *out, eb_team *team)
{
    if (p->nsrc == 1)
        x1 = x0; /* never read: its strides are 0 */
    int k = perm_kind(p);
    if (p->rank == 0) {
        one_elem(k, out, x0, x1);
        return;
    }
    perm_job j = {.p = p, .nest = nests[k], .x0 = x0, .x1 = x1, .out = out};
    if (eb_team_size(team) > 1 && p->split >= 0 &&
        p->elems * p->es >=
            PERM_PARALLEL_MIN_BYTES) {
        eb_team_run(team, perm_part, &j);
        return;
    }
    j.nest(p, x0, x1, out, 0, p->split >= 0 ? p->shape[p->split] : 0);
}
