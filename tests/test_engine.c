/* test_engine: kernels and dispatch against the naive reference, on chosen
 * shapes (1-sized dims, scalars, non-square, strided, batches large and
 * small) and on hundreds of seeded random einsums. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "blas.h"
#include "check.h"
#include "contract.h"
#include "einsum_util.h"
#include "fuse.h"
#include "gemm512.h"
#include "kernels.h"
#include "trace.h"
#include "vecstream.h"

typedef struct {
    const char *fs, *sizes;
    eb_kind kind; /* expected kernel of the first step, or -1 */
    int prep;     /* expected operand preparations of the first step */
} case_t;

/* Expected kind of a small square GEMM: the own kernel's, or BLAS's where
 * the BLAS has small-matrix kernels (eb_blas_small_kernels). */
#define KIND_SQUARE ((eb_kind)-2)

/* Expected kind of a GEMM with a side below EB_OWN_WIDER_SIDE that the
 * rules without a wider own kernel give to BLAS: the own kernel's where
 * eb_contract_own_wider() (and then read in place: no operand
 * preparations). */
#define KIND_SKINNY ((eb_kind)-3)

static eb_kind want_kind(eb_kind k)
{
    if (k == KIND_SKINNY)
        return eb_contract_own_wider() ? EB_KIND_SMALL_GEMM : EB_KIND_GEMM;
    if (k != KIND_SQUARE)
        return k;
    return eb_blas_small_kernels() ? EB_KIND_GEMM : EB_KIND_SMALL_GEMM;
}

static const case_t cases[] = {
    {"ij,jk->ik", "i=68,j=48,k=40", KIND_SKINNY, 0},
    /* Batch elements next to each other in C (w innermost): split along
     * n on two or three threads, not by batch element. */
    {"wmk,wkn->nmw", "w=2,m=4,k=4,n=3001", (eb_kind)-1, 0},
    {"ij,kj->ik", "i=68,j=48,k=40", KIND_SKINNY, 0},
    {"ji,jk->ik", "i=68,j=48,k=40", KIND_SKINNY, 0},
    {"ji,kj->ki", "i=68,j=48,k=40", KIND_SKINNY, 0},
    {"ij,jk->ki", "i=68,j=48,k=40", KIND_SKINNY, 0},
    /* Both sides of C at least EB_OWN_WIDER_SIDE: BLAS with any CPU. */
    {"ij,jk->ik", "i=136,j=48,k=130", EB_KIND_GEMM, 0},
    {"ij,kj->ik", "i=136,j=48,k=130", EB_KIND_GEMM, 0},
    {"ji,jk->ik", "i=136,j=48,k=130", EB_KIND_GEMM, 0},
    {"ji,kj->ki", "i=136,j=48,k=130", EB_KIND_GEMM, 0},
    {"ij,jk->ki", "i=136,j=48,k=130", EB_KIND_GEMM, 0},
    {"ij,jk->ik", "i=128,j=48,k=131", EB_KIND_GEMM, 0},
    {"ij,jk->ik", "i=127,j=48,k=131", KIND_SKINNY, 0},
    /* All sides <= 64, M and N multiples of 4: the own kernel, unless
     * the BLAS has small-matrix kernels of its own. */
    {"ij,jk->ik", "i=64,j=48,k=40", KIND_SQUARE, 0},
    {"ij,kj->ik", "i=64,j=48,k=40", KIND_SQUARE, 0},
    {"ji,jk->ik", "i=64,j=48,k=40", KIND_SQUARE, 0},
    {"ji,kj->ki", "i=64,j=48,k=40", KIND_SQUARE, 0},
    {"ij,jk->ki", "i=64,j=33,k=40", KIND_SQUARE, 0},
    {"ij,jk->ik", "i=64,j=48,k=42", KIND_SKINNY, 0},
    {"bij,bjk->bik", "b=3,i=40,j=33,k=30", KIND_SKINNY, 0},
    {"bij,bjk->bik", "b=300,i=4,j=5,k=3", EB_KIND_SMALL_GEMM, 0},
    {"bij,bjk->ibk", "b=5,i=30,j=20,k=17", -1, -1},
    {"ij,ij->ij", "i=37,j=29", EB_KIND_MUL, 0},
    {"ij,ji->ij", "i=37,j=29", EB_KIND_MUL, 0},
    {"i,j->ij", "i=37,j=29", EB_KIND_OUTER, 0},
    {"i,i->", "i=1000", EB_KIND_DOT, 0},
    {"bi,bi->b", "b=7,i=100", EB_KIND_DOT, 0},
    {"ij,j->i", "i=50,j=70", EB_KIND_GEMV, 0},
    {"ji,j->i", "i=50,j=70", EB_KIND_GEMV, 0},
    {"j,jk->k", "j=50,k=70", EB_KIND_GEMV, 0},
    {"j,kj->k", "j=50,k=70", EB_KIND_GEMV, 0},
    {"ijk,jl->il", "i=20,j=30,k=7,l=25", -1, 1},
    {"ii,ij->j", "i=20,j=30", -1, -1},
    {"iij,jk->ik", "i=9,j=30,k=25", -1, -1},
    {",ij->ij", "i=3,j=4", EB_KIND_OUTER, 0},
    {",->", "", EB_KIND_MUL, 0},
    {"i,->i", "i=5", EB_KIND_OUTER, 0},
    {"aij,jk->aik", "a=1,i=68,j=48,k=40", KIND_SKINNY, 0},
    {"aij,jk->aik", "a=1,i=136,j=48,k=130", EB_KIND_GEMM, 0},
    {"ij,jk->ik", "i=1,j=1,k=1", EB_KIND_MUL, 0},
    {"ij,jk->ik", "i=1,j=48,k=40", EB_KIND_GEMV, 0},
    {"tkj,to->tokj", "t=16,k=16,j=16,o=64", -1, -1},
    {"tjk,to->tokj", "t=16,k=16,j=16,o=64", -1, -1},
    {"abcd,cdef->abef", "a=3,b=4,c=5,d=6,e=7,f=8", EB_KIND_SMALL_GEMM, 0},
    {"abcd,dcef->abef", "a=3,b=4,c=5,d=6,e=7,f=8", -1, -1},
    {"αβ,βγ->αγ", "α=17,β=19,γ=23", EB_KIND_SMALL_GEMM, 0},
    {"αβ,βγ->αγ", "α=27,β=19,γ=23", KIND_SKINNY, 0},
    {"ij->ji", "i=37,j=41", EB_KIND_COPY, 0},
    {"iij->j", "i=5,j=6", EB_KIND_COPY, 0},
    {"ij->", "i=5,j=6", EB_KIND_COPY, 0},
    /* Large enough for the engine threads to split the work. */
    {"ij,ij->ij", "i=300,j=301", EB_KIND_MUL, 0},
    {"ij,ji->ij", "i=300,j=301", EB_KIND_MUL, 0},
    {"bij,bjk->bik", "b=2000,i=4,j=5,k=3", EB_KIND_SMALL_GEMM, 0},
    {"bij,bjk->kbi", "b=2000,i=4,j=5,k=3", -1, -1},
    {"bi,bj->bij", "b=100,i=30,j=31", EB_KIND_OUTER, 0},
    {"bk,bk->b", "b=9000,k=9", EB_KIND_DOT, 0},
    {"ij->ji", "i=400,j=300", EB_KIND_COPY, 0},
    {"ijk->ki", "i=60,j=50,k=40", EB_KIND_COPY, 0},
    /* Reductions that write enough to split (parts of the outermost
     * output dim, claimed by the team). */
    {"ijk->ik", "i=301,j=5,k=300", EB_KIND_COPY, 0},
    {"ijk->ki", "i=301,j=3,k=299", EB_KIND_COPY, 0},
    /* BLAS GEMMs that two engine threads split between them: along M or
     * N (whichever is longer, lengths not multiples of 8), C row- or
     * column-major, operands stored transposed; the same shapes with
     * sides below EB_OWN_WIDER_SIDE on the own kernel where it is wider. */
    {"ij,jk->ik", "i=70,j=40,k=33", KIND_SKINNY, 0},
    {"ij,jk->ik", "i=33,j=40,k=150", KIND_SKINNY, 0},
    {"ij,jk->ki", "i=45,j=40,k=101", KIND_SKINNY, 0},
    {"ji,kj->ik", "i=50,j=40,k=41", KIND_SKINNY, 0},
    {"ij,jk->ik", "i=140,j=40,k=133", EB_KIND_GEMM, 0},
    {"ij,jk->ik", "i=133,j=40,k=150", EB_KIND_GEMM, 0},
    {"ij,jk->ki", "i=145,j=40,k=201", EB_KIND_GEMM, 0},
    {"ji,kj->ik", "i=150,j=40,k=141", EB_KIND_GEMM, 0},
    {"ji,kj->ki", "i=23,j=40,k=200", KIND_SKINNY, 0},
    /* ... along C's outer side where it is shorter but long next to K
     * (blas_split_m): row-major C split by rows, column-major by columns;
     * with a long K the longer side again. */
    {"ij,jk->ik", "i=150,j=24,k=301", EB_KIND_GEMM, 0},
    {"ij,jk->ki", "i=301,j=24,k=150", EB_KIND_GEMM, 0},
    {"ji,kj->ki", "i=305,j=30,k=139", EB_KIND_GEMM, 0},
    {"ij,jk->ik", "i=130,j=200,k=300", EB_KIND_GEMM, 0},
    /* ... and GEMVs, along y (lengths not multiples of 8), A or B stored
     * either way. */
    {"ij,j->i", "i=301,j=250", EB_KIND_GEMV, 0},
    {"ji,j->i", "i=301,j=250", EB_KIND_GEMV, 0},
    {"j,jk->k", "j=250,k=299", EB_KIND_GEMV, 0},
    {"j,kj->k", "j=250,k=299", EB_KIND_GEMV, 0},
    {"ij,j->i", "i=17,j=4000", EB_KIND_GEMV, 0},
    /* A short side of C from 21 to 31: the own kernel where its rows are
     * the short side (C's long side contiguous, operands stored either
     * way, odd sizes), BLAS otherwise. (Kinds are checked for eager's
     * canonical output order; C column-major, as trace lays it out, is
     * checked for results only.) */
    {"ij,jk->ik", "i=21,j=40,k=150", EB_KIND_SMALL_GEMM, 0},
    {"ji,kj->ik", "i=23,j=37,k=151", EB_KIND_GEMM, 0}, /* B copied: skinny_to_blas */
    {"ij,jk->ki", "i=151,j=37,k=23", -1, -1},
    {"ji,kj->ki", "i=301,j=45,k=29", EB_KIND_SMALL_GEMM, 0},
    {"ji,jk->ik", "i=27,j=203,k=97", EB_KIND_SMALL_GEMM, 0},
    {"ij,jk->ik", "i=151,j=37,k=23", KIND_SKINNY, 0},
    {"ji,kj->ik", "i=301,j=45,k=29", KIND_SKINNY, 0},
    /* ... unless K is at least POST_MIN_K (128) and the long side's
     * operand is contiguous along it: then the own kernel writes C with
     * its long side contiguous and a post permutation puts it in the
     * fixed order (long side M or N, short side 21 to 31). */
    {"ji,kj->ik", "i=301,j=150,k=29", EB_KIND_SMALL_GEMM, 0},
    {"ji,jk->ik", "i=203,j=131,k=21", EB_KIND_SMALL_GEMM, 0},
    {"ij,jk->ki", "i=23,j=150,k=301", EB_KIND_SMALL_GEMM, 0},
    {"ij,jk->ik", "i=151,j=137,k=23", KIND_SKINNY, 0},
    /* A short K goes to the own kernel, batched or not: row-major C,
     * column-major C (computed transposed), B without unit column stride
     * (copied in panels), and C strided both ways (a stack tile). */
    {"ij,jk->ik", "i=300,j=8,k=500", EB_KIND_SMALL_GEMM, 0},
    {"ij,jk->ki", "i=200,j=12,k=1300", EB_KIND_SMALL_GEMM, 0},
    {"ji,kj->ik", "i=50,j=5,k=70", EB_KIND_SMALL_GEMM, 0},
    {"ij,jk->ik", "i=7,j=3,k=5", EB_KIND_SMALL_GEMM, 0},
    {"bij,bjk->kib", "b=5,i=30,j=4,k=17", EB_KIND_SMALL_GEMM, 0},
    {"ij,jk->ik", "i=1001,j=16,k=1003", EB_KIND_SMALL_GEMM, 0},
    /* A side of C below 21 goes to the own kernel too: full-width blocks
     * of 1 to 6 vectors (the last one shifted to end at C's last column),
     * rows left over, C row- or column-major, B read in place or copied
     * in panels, a long K cut into slices, in place over a two-level K
     * (contracted dims apart in A, with or without B's), a batch of them. */
    {"ij,jk->ik", "i=1710,j=19,k=19", EB_KIND_SMALL_GEMM, 0},
    {"ij,jk->ik", "i=19,j=1710,k=19", EB_KIND_SMALL_GEMM, 0},
    {"ij,jk->ik", "i=19,j=1111,k=19", EB_KIND_SMALL_GEMM, 0},
    {"ij,kj->ik", "i=23,j=700,k=11", EB_KIND_SMALL_GEMM, 0},
    {"ji,jk->ki", "i=13,j=1301,k=22", EB_KIND_SMALL_GEMM, 0},
    {"ij,kj->ki", "i=5,j=999,k=2", EB_KIND_SMALL_GEMM, 0},
    {"ij,jk->ik", "i=7,j=3000,k=7", EB_KIND_SMALL_GEMM, 0},
    {"aij,jk->aik", "a=50,i=3,j=17,k=6", EB_KIND_SMALL_GEMM, 0},
    {"abc,bd->adc", "a=90,b=19,c=19,d=19", -1, -1},
    {"acd,abd->bc", "a=90,b=19,c=19,d=19", EB_KIND_SMALL_GEMM, 0},
    {"acd,adb->bc", "a=37,b=19,c=21,d=13", EB_KIND_SMALL_GEMM, 0},
    {"cad,abd->bc", "a=37,b=9,c=3,d=13", EB_KIND_SMALL_GEMM, 0},
    {"acd,abd->cb", "a=700,b=5,c=19,d=3", EB_KIND_SMALL_GEMM, 0},
    {"zacd,zabd->zbc", "z=4,a=11,b=6,c=7,d=5", EB_KIND_SMALL_GEMM, 0},
    /* A batch dim with unit stride in both operands: vectors along it,
     * nothing permuted. Tails of w (37 = 32 + 4 + 1; 131 spans blocks),
     * contracted dims apart in B, C with w innermost or not, another
     * batch dim outside, and sizes that leave partial blocks of m and n. */
    {"ijb,jkb->ikb", "i=5,j=7,k=6,b=37", EB_KIND_VEC_GEMM, 0},
    {"ljhb,hnlb->jbn", "l=3,j=4,h=5,n=6,b=131", EB_KIND_VEC_GEMM, 0},
    {"zijb,zjkb->zikb", "z=3,i=4,j=5,k=7,b=12", EB_KIND_VEC_GEMM, 0},
    {"ijb,jkb->bki", "i=1,j=9,k=2,b=8", EB_KIND_VEC_GEMM, 0},
    {"ijb,jkb->ikb", "i=12,j=144,k=12,b=300", EB_KIND_VEC_GEMM, 0},
    {"ijb,jb->ib", "i=11,j=13,b=70", EB_KIND_VEC_GEMM, 0},
    {"ijb,jkb->ikb", "i=5,j=7,k=6,b=7", -1, -1},
    /* ... and with unit stride in one operand only: the other (smaller
     * than what the per-batch plan would move) is permuted to end with
     * it first. A batch label in the middle of A, one at the end of B
     * (eager's canonical orders on the lm networks), a batched GEMV,
     * another batch dim, C with w not innermost; w below VEC_MIN_W and
     * matrices past VEC_PREP_MAX_MNK stay with the other kernels. Where
     * w's stride in that operand is at most 8 and the labels inside it
     * are the pack's inner rows (k in A, n in B), the pack gathers it in
     * place (the next three: none permuted); vIpb,bHI has b's stride 6
     * in B over I, a contracted label: permuted. */
    {"ijb,bjk->ikb", "i=20,j=7,k=3,b=37", EB_KIND_VEC_GEMM, 1},
    {"bY,JKYb->bJK", "b=53,Y=7,J=3,K=5", EB_KIND_VEC_GEMM, 0},
    {"MkNbK,PkQKb->MNbPQ", "M=3,k=2,N=5,K=3,P=2,Q=3,b=41", EB_KIND_VEC_GEMM, 0},
    {"mgcw,cwk->mgwk", "m=3,g=5,c=7,k=20,w=29", EB_KIND_VEC_GEMM, 1},
    {"iKb,KbN->ibN", "i=3,K=5,b=29,N=17", EB_KIND_VEC_GEMM, 1},
    {"vIpb,bHI->vpbH", "v=4,I=3,p=5,b=131,H=2", EB_KIND_VEC_GEMM, 1},
    {"zijb,zbjk->bzki", "z=3,i=9,j=5,k=2,b=19", EB_KIND_VEC_GEMM, 1},
    /* w with unit stride in A only, n in B and C (N at most 16): one
     * small GEMM per batch element with the batch loop inside the row
     * blocks (eb_kern_gemm_wrows), nothing permuted: lm's mgcw,cwk->mgwk
     * (N of 4 and 12, w past the pack's 16 and long enough for the
     * threads to split it), N of 1-3 (a masked vector), another batch
     * dim outside w, w split in units (K N = 2 elements: units of 256). */
    {"mgcw,cwk->mgwk", "m=3,g=5,c=7,k=4,w=29", EB_KIND_SMALL_GEMM, 0},
    {"mgcw,cwk->mgwk", "m=3,g=5,c=7,k=12,w=29", EB_KIND_SMALL_GEMM, 0},
    {"mgcw,cwk->mgwk", "m=2,g=7,c=3,k=13,w=301", EB_KIND_SMALL_GEMM, 0},
    {"iKb,KbN->ibN", "i=3,K=5,b=29,N=6", EB_KIND_SMALL_GEMM, 0},
    {"iKb,KbN->ibN", "i=5,K=2,b=40,N=3", EB_KIND_SMALL_GEMM, 0},
    {"zmcw,zcwk->zmwk", "z=3,m=5,c=4,w=19,k=7", EB_KIND_SMALL_GEMM, 0},
    {"mcw,cwk->mwk", "m=9,c=2,w=700,k=1", -1, -1},
    /* Gathered packs whose rows lie one after another inside w (four at
     * a time: loads transposed in registers, the rest gathered): A's
     * inner F of 4 (lm's hmf0F; w with a tail past the last chunk of 8,
     * and long enough for the threads to split), an inner Y of 5 (a
     * quad and one gathered row), B's inner N of 6 (rows n of the pack;
     * C with w innermost: with n there, eb_kern_gemm_wrows), and an inner
     * F of 8 (two quads). */
    {"hmfwF,FlmCw->hfwlC", "h=2,m=3,f=3,w=37,F=4,l=2,C=3",
     EB_KIND_VEC_GEMM, 0},
    {"hmfwF,FlmCw->hfwlC", "h=3,m=2,f=5,w=301,F=4,l=3,C=5",
     EB_KIND_VEC_GEMM, 0},
    /* ... and with C's n one run of 8 to 16 (where the CPU runs the
     * AVX-512 kernels, one small GEMM per element of w on B's block
     * transposed, A broadcast in place: eb_kern_vec_rows_avx512): N of
     * 8, 15 (above) and 16, rows of C in blocks of 8 and remainders,
     * another batch dim outside w. */
    {"hmfwF,FlmCw->hfwlC", "h=2,m=3,f=3,w=37,F=2,l=2,C=4",
     EB_KIND_VEC_GEMM, 0},
    {"hmfwF,FlmCw->hfwlC", "h=3,m=2,f=3,w=45,F=3,l=4,C=4",
     EB_KIND_VEC_GEMM, 0},
    {"zhmwF,zFmCw->zhwC", "z=3,h=5,m=3,w=41,F=4,C=9", EB_KIND_VEC_GEMM, 0},
    {"bY,JKYb->bJK", "b=45,Y=5,J=3,K=2", EB_KIND_VEC_GEMM, 0},
    {"iKb,KbN->iNb", "i=3,K=5,b=29,N=6", EB_KIND_VEC_GEMM, 0},
    {"mwF,Fnw->mwn", "m=5,w=19,F=8,n=3", EB_KIND_VEC_GEMM, 0},
    /* w with a small stride in both operands (eager, else an operand and
     * C would be permuted): both packs read in place, four rows i at a
     * time (A's inner H of m, B's inner J of k; lm's vJ0H,p0J->v0Hp),
     * with a w tail and long enough to split; an inner H of 5 (a quad and
     * a gathered row) with B's J of 3 (gathers); not with labels of m and
     * k both inside w in A. */
    {"vJwH,pwJ->vwHp", "v=3,J=4,w=37,H=4,p=5", EB_KIND_VEC_GEMM, 0},
    {"vJwH,pwJ->vwHp", "v=4,J=4,w=301,H=4,p=4", EB_KIND_VEC_GEMM, 0},
    {"vJwH,pwJ->vwHp", "v=2,J=3,w=45,H=5,p=3", EB_KIND_VEC_GEMM, 0},
    {"vwJH,pwJ->vwHp", "v=3,J=2,w=37,H=4,p=5", EB_KIND_SMALL_GEMM, -1},
    /* w with unit stride in C only, each operand's pack rows compact
     * per element of w however far apart (plan_vec_out; lm brackets'
     * 0ÃÎß,0ßÄ->ÄÃÎ0): four adjacent rows per load from both packs,
     * with a w tail and long enough for the threads to split; a batched
     * GEMV (B's pack: rows k, no n: quads of rows i), another batch dim
     * outside w; not with an inner group of 3 (gathers), w below
     * VEC_MIN_W or products past VEC_OUT_MAX_MNK (lm's 1100 x (12 x 12 x
     * 12) ran slower in the network so). */
    {"bcde,bef->fcdb", "b=37,c=3,d=5,e=4,f=8", EB_KIND_VEC_GEMM, 0},
    {"bcde,bef->fcdb", "b=301,c=2,d=3,e=8,f=4", EB_KIND_VEC_GEMM, 0},
    {"bce,be->cb", "b=29,c=5,e=8", EB_KIND_VEC_GEMM, 0},
    {"zbcde,zbef->zfcdb", "z=3,b=19,c=3,d=2,e=4,f=4", EB_KIND_VEC_GEMM, 0},
    {"bcde,bef->fcdb", "b=37,c=3,d=5,e=3,f=8", EB_KIND_SMALL_GEMM, 0},
    {"bcde,bef->fcdb", "b=7,c=3,d=5,e=4,f=8", EB_KIND_SMALL_GEMM, 0},
    {"bcde,bef->fcdb", "b=37,c=4,d=4,e=8,f=8", EB_KIND_SMALL_GEMM, 0},
    /* A side of C of 1 with w of at least EB_VEC_GEMV_MIN_W and unit
     * stride in the larger operand (eb_kern_vec_gemv; lm's wu,nouw->wno):
     * C's columns in fours transposed (w with a tail of 1), a last group
     * of one, w innermost in C, the small operand strided along w (read
     * in place: A's wu with u inside w, prepared: B's bj), w past one span (K w
     * above EB_VEC_GEMV_SPAN: blocks of EB_VEC_GEMV_W), long enough for
     * the threads to split, another batch dim outside. */
    {"wu,nouw->wno", "w=301,u=5,n=3,o=4", EB_KIND_VEC_GEMM, 0},
    {"wu,nouw->wno", "w=77,u=3,n=5,o=1", EB_KIND_VEC_GEMM, 0},
    {"wu,nouw->now", "w=130,u=4,n=3,o=2", EB_KIND_VEC_GEMM, 0},
    /* ... s read in place along w at a stride of 7 and 8 (its rows moved
     * by 4 x 4 transposes, the tails of w and K scalar), and K in two
     * runs of 5 (a group of 4 across them: scalar from there). */
    {"wu,nouw->wno", "w=203,u=7,n=3,o=2", EB_KIND_VEC_GEMM, 0},
    {"wu,nouw->wno", "w=150,u=8,n=2,o=3", EB_KIND_VEC_GEMM, 0},
    {"vwu,nouvw->wno", "v=2,w=101,u=5,n=2,o=3", EB_KIND_VEC_GEMM, 0},
    {"ijb,bj->ib", "i=9,j=5,b=203", EB_KIND_VEC_GEMM, 1},
    {"uw,nouw->wno", "w=600,u=70,n=2,o=3", EB_KIND_VEC_GEMM, 0},
    {"uw,nouw->wno", "w=2000,u=5,n=3,o=4", EB_KIND_VEC_GEMM, 0},
    {"uw,nouw->wno", "w=2000,u=20,n=2,o=2", EB_KIND_VEC_GEMM, 0},
    {"zuw,znouw->zwno", "z=3,w=97,u=3,n=2,o=4", EB_KIND_VEC_GEMM, 0},
    {"ijb,bjk->ikb", "i=20,j=7,k=3,b=7", EB_KIND_SMALL_GEMM, 0},
    {"ijb,bjk->ikb", "i=40,j=40,k=30,b=9", KIND_SKINNY, 1},
    /* Outer products along a batch dim of unit stride in C: the engine's
     * rows along it; operands small next to C (the first) are first
     * permuted into C's order, the others are read in tiles as they lie. */
    {"bi,bj->ijb", "b=37,i=11,j=11", EB_KIND_OUTER, 2},
    {"bi,bj->jib", "b=165,i=3,j=64", EB_KIND_OUTER, 0},
    {"bi,bj->ijb", "b=3000,i=5,j=6", EB_KIND_OUTER, 0},
    {"zbi,zbj->zijb", "z=3,b=70,i=4,j=9", EB_KIND_OUTER, 0},
    {"bi,bj->ijb", "b=20,i=65,j=3", EB_KIND_OUTER, 0},
    /* Small C, long K: split along K over the team (the outer rows of a
     * two-level K, or the one run of K), partial Cs added. */
    {"ki,kj->ij", "i=19,j=19,k=1748", EB_KIND_SMALL_GEMM, 0},
    {"ki,kj->ji", "i=11,j=17,k=3001", EB_KIND_SMALL_GEMM, 0},
    {"amb,anb->nm", "a=41,m=19,b=37,n=13", EB_KIND_SMALL_GEMM, 0},
    {"amb,anb->mn", "a=3,m=7,b=601,n=5", EB_KIND_SMALL_GEMM, 0},
    /* A few rows of C against a long B row (past SKINNY_MAX_LONG) and a
     * short K: the short-K few-rows kernel, C row-major or strided. */
    {"bmk,bkn->bmn", "b=3,m=3,k=27,n=9001", EB_KIND_SMALL_GEMM, 0},
    {"bmk,bkn->nbm", "b=2,m=5,k=20,n=8300", -1, -1},
    /* Fewer batch elements than engine threads: the own GEMM split along
     * C's longer side, every batch element (only the first was computed
     * with three threads). */
    {"bmk,bkn->nbm", "b=2,m=5,k=20,n=2767", EB_KIND_SMALL_GEMM, 0},
    /* Batched BLAS GEMMs split by batch rows. */
    {"bij,bjk->bik", "b=7,i=45,j=33,k=31", KIND_SKINNY, 0},
    /* The vector-batch GEMM storing C through 4 x 4 transposes (n with
     * unit stride in C, w not), also over K slices that add to C. */
    {"ijb,jkb->ibk", "i=5,j=100,k=9,b=37", EB_KIND_VEC_GEMM, 0},
    {"ijb,jkb->bik", "i=7,j=13,k=4,b=21", EB_KIND_VEC_GEMM, 0},
    /* Blocked preparation: eager's A with free and contracted labels
     * interleaved (lm's hf0lC,klhcf->0Ckc) permuted block by block along
     * its outermost m label, B prepared whole; a last shorter block, none,
     * blocks of one m label with another inside, and one too small to
     * block. */
    {"hfwlC,klhcf->wCkc", "h=3,f=3,w=500,l=3,C=5,k=3,c=3",
     EB_KIND_SMALL_GEMM, 1},
    {"hfwlC,klhcf->wCkc", "h=3,f=3,w=484,l=3,C=5,k=3,c=3",
     EB_KIND_SMALL_GEMM, 1},
    {"wkxl,lkj->wxj", "w=1001,k=5,x=4,l=3,j=200", EB_KIND_SMALL_GEMM, 0},
    {"wkxl,lkj->wxj", "w=9,k=5,x=4,l=3,j=9", EB_KIND_SMALL_GEMM, 1},
    /* Eager's peeling (eb_contract_plan_peel): B's outermost free label
     * run as a batch label (A read with stride 0 along it), B read in
     * place instead of permuted whole; a BLAS GEMM turned into a batch of
     * own ones; too small to try. */
    {"RBQ,LRwB->QLw", "R=4,B=4,Q=4,L=6,w=401", EB_KIND_SMALL_GEMM, 0},
    {"ac,dcf->adf", "a=11,c=19,d=113,f=19", EB_KIND_SMALL_GEMM, 0},
    {"qyz,Aqwy->zAw", "q=4,y=5,z=4,A=4,w=2100", EB_KIND_SMALL_GEMM, 0},
    {"qyz,Aqwy->zAw", "q=4,y=5,z=4,A=4,w=21", EB_KIND_SMALL_GEMM, 1},
    /* ... few large products with a short K, although the saving is less
     * than half of what the step touches (lm's hmn,fn0F->hmf0F); not with
     * a long K (B would be read through strides: BLAS on both prepared). */
    {"hmn,fnwF->hmfwF", "h=3,m=5,n=3,f=3,w=1301,F=5", EB_KIND_SMALL_GEMM, 0},
    {"xaut,ubdfyx->atbdfy", "x=9,a=25,u=12,t=20,b=4,d=3,f=9,y=4",
     EB_KIND_GEMM, 2},
    {"abc,dbwe->acdwe", "a=3,b=3,c=5,d=3,w=1301,e=5", EB_KIND_SMALL_GEMM, 1},
    /* ... and one free label of each operand at once where C interleaves
     * the two free sides (mera's last step: P from A, Q from B, then the
     * rest of each): 9 GEMMs writing C in place (test_peel_both). */
    {"PMfG,fGQN->PQMN", "P=3,Q=3,M=200,N=40,f=5,G=4", EB_KIND_GEMM, 0},
    /* Chunked preparation (eb_plan.cp): eager's large operand (2^20
     * elements and more) whose labels interleave, permuted one chunk of
     * its innermost labels at a time into cache and multiplied from
     * there: B with contracted labels outside the chunk (blocks of C
     * added up; odd sizes, with free labels outside too), B whose output
     * is too large to add up (its contracted labels in the chunk: 4 runs
     * of B), B with only free ones outside, A (the other operand read in
     * place, or prepared), A with a diagonal (a chunk that is not
     * one run: runs of one element); then chunks whose free labels (C's
     * m or n side) are not one dim of C (Q, R apart twice; p, P apart)
     * and an operand too small to chunk: prepared whole. */
    {"zpabc,aNzbQcR->zNQRp", "z=4,p=2,a=4,b=4,c=4,N=64,Q=8,R=8",
     EB_KIND_SMALL_GEMM, 0},
    {"pzabc,aNzbQcR->NzQRp", "z=3,p=2,a=3,b=5,c=3,N=120,Q=7,R=10",
     EB_KIND_SMALL_GEMM, 0},
    {"zpabc,aNzbQcR->zNQRp", "z=4,p=16,a=4,b=4,c=4,N=64,Q=8,R=8",
     EB_KIND_SMALL_GEMM, 0},
    {"pab,NaQbR->NQRp", "p=3,N=1024,a=4,Q=8,b=4,R=8", EB_KIND_SMALL_GEMM, 0},
    {"NzaQbR,zbap->zNQRp", "z=3,p=3,N=315,a=4,Q=9,b=5,R=7",
     EB_KIND_SMALL_GEMM, 0},
    {"NzaQbR,zapb->zNQRp", "z=3,p=3,N=315,a=4,Q=9,b=5,R=7",
     EB_KIND_SMALL_GEMM, 1},
    {"NzaQbRR,zabp->zNQRp", "z=3,p=3,N=683,a=4,Q=16,b=4,R=2",
     EB_KIND_SMALL_GEMM, 0},
    {"pab,NaQbR->QNRp", "p=3,N=1024,a=4,Q=8,b=4,R=8", EB_KIND_SMALL_GEMM, 1},
    {"pab,NaQbR->NQpR", "p=3,N=1024,a=4,Q=8,b=4,R=8", EB_KIND_SMALL_GEMM, 1},
    {"zpPabc,aNzbQcR->zpNQRP", "z=4,p=2,P=3,a=4,b=4,c=4,N=64,Q=8,R=8",
     EB_KIND_SMALL_GEMM, 1},
    {"pab,NaQbR->QNRp", "p=3,N=64,a=4,Q=8,b=4,R=8", EB_KIND_SMALL_GEMM, 1},
    /* Chunks moved in groups of R elements (contiguous in B and in the
     * chunk's scratch: cp_scatter's copies of 2, 3, 4 and 5). */
    {"pab,NaQbR->NQRp", "p=3,N=1024,a=4,Q=32,b=4,R=2", EB_KIND_SMALL_GEMM, 0},
    {"pab,NaQbR->NQRp", "p=3,N=1024,a=4,Q=22,b=4,R=3", EB_KIND_SMALL_GEMM, 0},
    {"pab,NaQbR->NQRp", "p=2,N=1025,a=4,Q=16,b=4,R=4", EB_KIND_SMALL_GEMM, 0},
    {"pab,NaQbR->NQRp", "p=3,N=1024,a=4,Q=13,b=4,R=5", EB_KIND_SMALL_GEMM, 0},
    /* The streamed vector-batch GEMM (eb_plan.vs, where the AVX-512 kernel
     * runs): eager's large operand whose innermost labels are batch
     * labels, read in place along them: gm_queen's step 148 on fewer
     * labels (lanes l u w, 27 of 32 used; r = q s; 9 rows m = c m), A as
     * the large operand (lanes of one label, 13 of 16; 3 rows; no other
     * batch; 70 columns: the last block of one), lanes of two labels that
     * fill a vector with two other batch elements, 2 rows and columns
     * split over the threads. Kinds and preparations vary with the CPU. */
    {"hwscrilmuq,frpyhiqsbluw->wsclmuqfpyb",
     "h=3,w=3,s=3,c=3,r=3,i=3,l=3,m=3,u=3,q=3,f=5,p=7,y=4,b=3", -1, -1},
    {"pkqx,mkx->qmxp", "p=60,k=20,q=70,x=13,m=3", -1, -1},
    {"kKrmuw,nkjKruw->nrjmuw", "k=4,K=3,r=2,m=2,u=4,w=2,n=683,j=8", -1, -1},
};

/* The cases above that eager runs as the streamed vector-batch GEMM
 * where its AVX-512 kernel runs (eb_plan.vs). */
static const char *const streamed[][2] = {
    {"hwscrilmuq,frpyhiqsbluw->wsclmuqfpyb",
     "h=3,w=3,s=3,c=3,r=3,i=3,l=3,m=3,u=3,q=3,f=5,p=7,y=4,b=3"},
    {"pkqx,mkx->qmxp", "p=60,k=20,q=70,x=13,m=3"},
    {"kKrmuw,nkjKruw->nrjmuw", "k=4,K=3,r=2,m=2,u=4,w=2,n=683,j=8"},
};

/* The cases above that eager runs with a blocked preparation (eb_plan.bp;
 * its prepared A does not count in prep). */
static const char *const blocked[][2] = {
    {"hfwlC,klhcf->wCkc", "h=3,f=3,w=500,l=3,C=5,k=3,c=3"},
    {"hfwlC,klhcf->wCkc", "h=3,f=3,w=484,l=3,C=5,k=3,c=3"},
    {"wkxl,lkj->wxj", "w=1001,k=5,x=4,l=3,j=200"},
};

/* ... and with a chunked preparation (eb_plan.cp; its chunked operand
 * does not count in prep). */
static const char *const chunked[][2] = {
    {"zpabc,aNzbQcR->zNQRp", "z=4,p=2,a=4,b=4,c=4,N=64,Q=8,R=8"},
    {"pzabc,aNzbQcR->NzQRp", "z=3,p=2,a=3,b=5,c=3,N=120,Q=7,R=10"},
    {"zpabc,aNzbQcR->zNQRp", "z=4,p=16,a=4,b=4,c=4,N=64,Q=8,R=8"},
    {"pab,NaQbR->NQRp", "p=3,N=1024,a=4,Q=8,b=4,R=8"},
    {"NzaQbR,zbap->zNQRp", "z=3,p=3,N=315,a=4,Q=9,b=5,R=7"},
    {"NzaQbR,zapb->zNQRp", "z=3,p=3,N=315,a=4,Q=9,b=5,R=7"},
    {"NzaQbRR,zabp->zNQRp", "z=3,p=3,N=683,a=4,Q=16,b=4,R=2"},
    {"pab,NaQbR->NQRp", "p=3,N=1024,a=4,Q=32,b=4,R=2"},
    {"pab,NaQbR->NQRp", "p=3,N=1024,a=4,Q=22,b=4,R=3"},
    {"pab,NaQbR->NQRp", "p=2,N=1025,a=4,Q=16,b=4,R=4"},
    {"pab,NaQbR->NQRp", "p=3,N=1024,a=4,Q=13,b=4,R=5"},
};

static int listed(const case_t *c, const char *const (*list)[2], size_t n)
{
    for (size_t k = 0; k < n; k++)
        if (!strcmp(c->fs, list[k][0]) && !strcmp(c->sizes, list[k][1]))
            return 1;
    return 0;
}

static int is_blocked(const case_t *c)
{
    return listed(c, blocked, sizeof blocked / sizeof blocked[0]);
}

/* ... and, where the streamed form does not run (no AVX-512, Valgrind),
 * with a chunked preparation instead. */
static const char *const chunked_unstreamed[][2] = {
    {"kKrmuw,nkjKruw->nrjmuw", "k=4,K=3,r=2,m=2,u=4,w=2,n=683,j=8"},
};

static int is_chunked(const case_t *c)
{
    return listed(c, chunked, sizeof chunked / sizeof chunked[0]) ||
           (!eb_vs_avx512() &&
            listed(c, chunked_unstreamed,
                   sizeof chunked_unstreamed / sizeof chunked_unstreamed[0]));
}

static void test_cases(void)
{
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        tu_sizes sp = {cases[c].sizes};
        eb_instance *inst = tu_instance(cases[c].fs, tu_spec_size, &sp);
        EB_CHECK(inst != NULL, "%s builds", cases[c].fs);
        if (!inst)
            continue;
        eb_pair steps[8];
        eb_path path;
        tu_seq_path(&path, steps, inst->num_tensors);
        for (int m = 0; m < EB_MODE_COUNT; m++) {
            double e = tu_mode_vs_naive(inst, &path, 7 + c, (eb_mode)m, NULL);
            EB_CHECK(e >= 0 && e <= 1e-12, "%s (%s) %s: rel err %g",
                     cases[c].fs, cases[c].sizes, eb_mode_name((eb_mode)m), e);
        }
        eb_step_desc d;
        eb_error err;
        if (eb_eager_describe(inst, &path, &d, &err) == EB_OK) {
            if ((int)cases[c].kind >= 0 || cases[c].kind == KIND_SQUARE ||
                cases[c].kind == KIND_SKINNY)
                EB_CHECK(d.plan.kind == want_kind(cases[c].kind),
                         "%s (%s): kernel %s, want %s", cases[c].fs,
                         cases[c].sizes, eb_kind_name(d.plan.kind),
                         eb_kind_name(want_kind(cases[c].kind)));
            EB_CHECK(d.plan.bp == is_blocked(&cases[c]),
                     "%s (%s): blocked preparation %d", cases[c].fs,
                     cases[c].sizes, d.plan.bp);
            EB_CHECK(d.plan.cp == is_chunked(&cases[c]),
                     "%s (%s): chunked preparation %d", cases[c].fs,
                     cases[c].sizes, d.plan.cp);
            int vs = listed(&cases[c], streamed,
                            sizeof streamed / sizeof streamed[0]) &&
                     eb_vs_avx512();
            EB_CHECK(d.plan.vs == vs && (!vs || (d.plan.kind ==
                                                     EB_KIND_VEC_GEMM &&
                                                 !d.plan.prep[0] &&
                                                 !d.plan.prep[1])),
                     "%s (%s): streamed %d (%s), want %d", cases[c].fs,
                     cases[c].sizes, d.plan.vs, eb_kind_name(d.plan.kind),
                     vs);
            int prep = cases[c].kind == KIND_SKINNY && eb_contract_own_wider()
                           ? 0
                           : cases[c].prep;
            if (prep >= 0)
                EB_CHECK(d.plan.prep[0] + d.plan.prep[1] == prep,
                         "%s (%s): %d operand preparations, want %d",
                         cases[c].fs, cases[c].sizes,
                         d.plan.prep[0] + d.plan.prep[1], prep);
        }
        eb_instance_destroy(inst);
    }
}

/* The vector-batch form after a permutation is float64 code: a step of
 * another dtype with that layout keeps its dtype and its other kernel. */
static void test_vec_prep_dtype(void)
{
    /* "ijb,bjk->ikb" with ids i0 j1 k2 b3 */
    int64_t size[4] = {20, 7, 3, 37};
    int aid[3] = {0, 1, 3}, bid[3] = {3, 1, 2}, keep[3] = {0, 2, 3};
    for (int d = 0; d < EB_DTYPE_COUNT; d++) {
        eb_view a, b;
        eb_view_compact(&a, NULL, aid, 3, size);
        eb_view_compact(&b, NULL, bid, 3, size);
        eb_plan p;
        eb_error err;
        EB_CHECK(eb_contract_plan(&a, &b, keep, 3, 1, size, (eb_dtype)d, &p,
                                  &err) == EB_OK, "plan %d", d);
        EB_CHECK(p.dt == (eb_dtype)d, "dtype %d kept (%d)", d, (int)p.dt);
        EB_CHECK((p.kind == EB_KIND_VEC_GEMM) == (d == EB_F64),
                 "dtype %d: kernel %s", d, eb_kind_name(p.kind));
    }
}

/* Eager's plan of the first step of fs (sizes as "i=3,j=4") into *d; 0
 * (reported) when the instance does not build or describe. */
static int eager_first_step(const char *fs, const char *sizes,
                            eb_step_desc *d)
{
    tu_sizes sp = {sizes};
    eb_instance *inst = tu_instance(fs, tu_spec_size, &sp);
    EB_CHECK(inst != NULL, "%s builds", fs);
    if (!inst)
        return 0;
    eb_pair steps[8];
    eb_path path;
    tu_seq_path(&path, steps, inst->num_tensors);
    eb_error err;
    int ok = eb_eager_describe(inst, &path, d, &err) == EB_OK;
    EB_CHECK(ok, "%s describes", fs);
    eb_instance_destroy(inst);
    return ok;
}

/* Which vector-batch plans stream their larger operand through
 * eb_kern_vec_gemv: a side of C of 1 (M: A small, 1; N: B small, 2) with
 * w of at least EB_VEC_GEMV_MIN_W and unit stride in the larger operand;
 * not with both sides above 1 or a shorter w. */
static void test_vec_gemv_plans(void)
{
    static const struct {
        const char *fs, *sizes;
        int want;
    } c[] = {
        {"wu,nouw->wno", "w=301,u=5,n=3,o=4", 1},
        {"uw,nouw->wno", "w=600,u=70,n=2,o=3", 1},
        {"ijb,bj->ib", "i=9,j=5,b=203", 2},
        {"ijb,jb->ib", "i=11,j=13,b=70", 2},
        {"wu,nouw->wno", "w=63,u=5,n=3,o=4", 0},
        {"ijb,jkb->ikb", "i=5,j=7,k=6,b=300", 0},
    };
    for (size_t q = 0; q < sizeof c / sizeof c[0]; q++) {
        eb_step_desc d;
        if (!eager_first_step(c[q].fs, c[q].sizes, &d))
            continue;
        EB_CHECK(d.plan.kind == EB_KIND_VEC_GEMM &&
                     eb_plan_vec_gemv(&d.plan) == c[q].want,
                 "%s (%s): kernel %s, vec_gemv %d, want %d", c[q].fs,
                 c[q].sizes, eb_kind_name(d.plan.kind),
                 eb_plan_vec_gemv(&d.plan), c[q].want);
    }
}

/* Eager's peel into few large products with a short K may prepare the
 * widened operand (brackets' ñÅî,ÈÅ0ð->ñîÈ0ð: A's 45 elements against
 * B's 58545 permuted whole): B is then read in place, and A is prepared
 * once, its widened label read at stride 0. */
static void test_peel_big(void)
{
    /* "abc,dbwe->acdwe" with ids a0 b1 c2 d3 w4 e5 */
    int64_t size[6] = {3, 3, 5, 3, 1301, 5};
    int aid[3] = {0, 1, 2}, bid[4] = {3, 1, 4, 5}, keep[5] = {0, 2, 3, 4, 5};
    eb_view a, b;
    eb_view_compact(&a, NULL, aid, 3, size);
    eb_view_compact(&b, NULL, bid, 4, size);
    eb_plan p;
    eb_error err;
    EB_CHECK(eb_contract_plan_peel(&a, &b, keep, 5, size, EB_F64, &p, &err) ==
                 EB_OK, "plan");
    EB_CHECK(p.kind == EB_KIND_SMALL_GEMM && p.nbatch == 3 && p.prep[0] &&
                 !p.prep[1] && p.prep_elems[0] == 45 &&
                 p.bstride[0][0] == 0,
             "peeled: %s, %lld batches, prep %d %d (%lld)",
             eb_kind_name(p.kind), (long long)p.nbatch, p.prep[0], p.prep[1],
             (long long)p.prep_elems[0]);
}

/* Both modes of fs (sizes as "i=3,j=4"), one step, against the naive sum
 * on inputs from seed. */
static void modes_match_naive(const char *fs, const char *sizes,
                              uint64_t seed)
{
    tu_sizes sp = {sizes};
    eb_instance *inst = tu_instance(fs, tu_spec_size, &sp);
    if (!inst)
        return; /* (reported by eager_first_step) */
    eb_pair steps[2];
    eb_path path;
    tu_seq_path(&path, steps, inst->num_tensors);
    for (int m = 0; m < EB_MODE_COUNT; m++) {
        double e = tu_mode_vs_naive(inst, &path, seed, (eb_mode)m, NULL);
        EB_CHECK(e >= 0 && e <= 1e-12, "%s (%s) %s: rel err %g", fs, sizes,
                 eb_mode_name((eb_mode)m), e);
    }
    eb_instance_destroy(inst);
}

/* The deeper peel: A's free labels split by contracted ones (gm_queen
 * eager's frphivgdynexoqsb,lxuvw->...luw, 43 M elements of A permuted
 * whole) run as batch labels of B down to A's innermost free run, A read
 * in place and B prepared once; results in both modes against the naive
 * sum. Below PEEL_DEEP_MIN_MOVED elements moved it is not tried. */
static void test_peel_deep(void)
{
    static const struct {
        const char *sizes;
        int deep;
    } c[] = {{"a=32,v=3,b=16,x=3,c=32,l=3,u=3,w=3", 1},
             {"a=8,v=3,b=8,x=3,c=16,l=3,u=3,w=3", 0},
             /* K = 48: taken while the elements moved are at least
              * 1/PEEL_DEEP_FLOPS of the flops (2 N of them per element of
              * A): N = 27 yes (where the own kernel is the wider one: the
              * AVX2 rules read A in place only in products of one row,
              * which the peel does not take), N = 512 no. */
             {"a=32,v=6,b=4,x=8,c=32,l=3,u=3,w=3", 2},
             {"a=32,v=6,b=4,x=8,c=32,l=8,u=8,w=8", 0}};
    for (size_t q = 0; q < sizeof c / sizeof c[0]; q++) {
        eb_step_desc d;
        if (!eager_first_step("avbxc,lxuvw->abcluw", c[q].sizes, &d))
            continue;
        /* (how deep depends on the kernel rules: 32 rows of A a product
         * where the own kernel is the wider one, 1 elsewhere) */
        int deep = d.plan.nbatch > 1 && !d.plan.prep[0] &&
                   d.plan.prep_elems[1] == d.plan.N * d.plan.K;
        int want = c[q].deep == 2 ? eb_contract_own_wider() : c[q].deep;
        EB_CHECK(deep == want && (!deep || d.plan.kind == EB_KIND_SMALL_GEMM),
                 "avbxc,lxuvw->abcluw (%s): %s, %lld x (%lld x %lld x %lld), "
                 "prep %d %d, want the deep peel %d", c[q].sizes,
                 eb_kind_name(d.plan.kind), (long long)d.plan.nbatch,
                 (long long)d.plan.M, (long long)d.plan.N,
                 (long long)d.plan.K, d.plan.prep[0], d.plan.prep[1],
                 want);
        modes_match_naive("avbxc,lxuvw->abcluw", c[q].sizes, 5);
    }
    /* A two-level K that only the operand read in place fuses: lm eager's
     * hf0lC,klhcf->0Ckc (A's K = (h f) and l; B's (h, f) apart, B
     * prepared) peeled over 0, A read in place; and no peel down to
     * products with a side of 1 (brackets' dabcef,fcwd->abew: 1996 GEMVs
     * of 64 x 64 ran 3.4 ms against 0.45 ms as one GEMM). */
    static const struct {
        const char *fs, *sizes;
        int deep;
    } k2[] = {{"hf0lC,klhcf->0Ckc", "h=4,f=4,0=600,l=4,C=4,k=4,c=4", 1},
              {"dabcef,fcwd->abew", "d=4,a=4,b=4,c=4,e=4,f=4,w=1996", 0}};
    for (size_t q = 0; q < sizeof k2 / sizeof k2[0]; q++) {
        eb_step_desc d;
        if (!eager_first_step(k2[q].fs, k2[q].sizes, &d))
            continue;
        int deep = d.plan.nbatch > 1;
        EB_CHECK(deep == k2[q].deep &&
                     (!deep || (d.plan.K1 > 1 && !d.plan.prep[0])),
                 "%s (%s): %s, %lld x (%lld x %lld x %lld), K1 %lld, prep "
                 "%d %d, want the deep peel %d", k2[q].fs, k2[q].sizes,
                 eb_kind_name(d.plan.kind), (long long)d.plan.nbatch,
                 (long long)d.plan.M, (long long)d.plan.N,
                 (long long)d.plan.K, (long long)d.plan.K1, d.plan.prep[0],
                 d.plan.prep[1], k2[q].deep);
        modes_match_naive(k2[q].fs, k2[q].sizes, 9);
    }
}

/* C = P Q M N from A = P M f G and B = f G Q N: as one GEMM (M = P M,
 * N = Q N) C would be permuted whole; peeling P into B and Q into A (each
 * at stride 0) gives 9 GEMMs whose C blocks lie in place. Trace's last
 * step gets the same plan (its order is fixed too). */
static void test_peel_both(void)
{
    /* ids P0 Q1 M2 N3 f4 G5 */
    int64_t size[6] = {3, 3, 200, 40, 5, 4};
    int aid[4] = {0, 2, 4, 5}, bid[4] = {4, 5, 1, 3}, keep[4] = {0, 1, 2, 3};
    eb_view a, b;
    eb_view_compact(&a, NULL, aid, 4, size);
    eb_view_compact(&b, NULL, bid, 4, size);
    eb_plan p;
    eb_error err;
    EB_CHECK(eb_contract_plan(&a, &b, keep, 4, 1, size, EB_F64, &p, &err) ==
                     EB_OK &&
                 p.post,
             "one GEMM: C permuted (post %d)", p.post);
    EB_CHECK(eb_contract_plan_peel(&a, &b, keep, 4, size, EB_F64, &p, &err) ==
                 EB_OK, "plan");
    EB_CHECK(p.kind == EB_KIND_GEMM && p.nbatch == 9 && p.M == 200 &&
                 p.N == 40 && p.K == 20 && !p.post && !p.prep[0] &&
                 !p.prep[1],
             "peeled both: %s, %lld x (%lld x %lld x %lld), post %d, prep "
             "%d %d",
             eb_kind_name(p.kind), (long long)p.nbatch, (long long)p.M,
             (long long)p.N, (long long)p.K, p.post, p.prep[0], p.prep[1]);
    /* Too few flops a product: kept as one GEMM. */
    size[2] = 20;
    size[3] = 10;
    eb_view_compact(&a, NULL, aid, 4, size);
    eb_view_compact(&b, NULL, bid, 4, size);
    EB_CHECK(eb_contract_plan_peel(&a, &b, keep, 4, size, EB_F64, &p, &err) ==
                     EB_OK &&
                 p.nbatch == 1,
             "small: %lld batches", (long long)p.nbatch);
}

/* ---- random differential ------------------------------------------------ */

typedef struct {
    int64_t size[16];
    uint32_t cp[16];
} rand_sizes;

static int64_t rand_size(uint32_t cp, void *arg)
{
    rand_sizes *r = arg;
    for (int k = 0; k < 16; k++)
        if (r->cp[k] == cp)
            return r->size[k];
    return 1;
}

/* One random einsum and path; returns 1 if it was tested. */
static int random_case(uint64_t *s, int idx)
{
    static const uint32_t pool[16] = {'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h',
                                      0x3B1, 0x3B2, 0x3B3, 0x416, 0xE9, '0',
                                      'Z', 0x10348};
    rand_sizes rs;
    int nl = 1 + tu_rnd(s, 9);
    for (int k = 0; k < 16; k++) {
        rs.cp[k] = pool[(k + idx) % 16];
        rs.size[k] = 1 + tu_rnd(s, 6);
    }
    int n = 2 + tu_rnd(s, 6);
    char fs[1024];
    size_t len = 0;
    int used[16] = {0};
    for (int k = 0; k < n; k++) {
        int rank = tu_rnd(s, 5);
        for (int a = 0; a < rank; a++) {
            /* A few labels repeat inside one operand (diagonals). */
            int l = tu_rnd(s, nl);
            used[l] = 1;
            len += eb_utf8_encode(rs.cp[l], fs + len);
        }
        fs[len++] = k + 1 < n ? ',' : '-';
    }
    fs[len++] = '>';
    for (int l = 0; l < nl; l++)
        if (used[l] && tu_rnd(s, 3) == 0)
            len += eb_utf8_encode(rs.cp[l], fs + len);
    fs[len] = '\0';
    eb_instance *inst = tu_instance(fs, rand_size, &rs);
    if (!inst)
        return 0;
    eb_pair steps[8];
    eb_path path;
    tu_random_path(s, n, steps, &path);
    for (int m = 0; m < EB_MODE_COUNT; m++) {
        double e = tu_mode_vs_naive(inst, &path, (uint64_t)idx, (eb_mode)m,
                                    NULL);
        EB_CHECK(e >= 0 && e <= 1e-12, "random case %d %s: %s: rel err %g",
                 idx, eb_mode_name((eb_mode)m), fs, e);
    }
    eb_instance_destroy(inst);
    return 1;
}

static void test_random(void)
{
    uint64_t s = 12345;
    int tested = 0;
    for (int idx = 0; idx < 600; idx++)
        tested += random_case(&s, idx);
    EB_CHECK(tested >= 500, "only %d random cases built", tested);
}

/* The next of a seeded sequence, uniform in [-0.5, 0.5). */
static double rand_unit(uint64_t *seed)
{
    *seed = *seed * 6364136223846793005ULL + 1;
    return (double)(*seed >> 40) / 16777216.0 - 0.5;
}

/* eb_kern_small_gemm(M, N, K (K1 blocks)) against a plain double loop:
 * A's rows padded (sam = total + 3); B row-major with padded rows (N + 5
 * apart, k1 blocks of K rows) or, with bcols, column-major with padded
 * columns (total + 5 apart: both operands contiguous along k, the
 * k-vector kernel's layout); C row-major (colc 0: rows N + 2 apart),
 * column-major (1: columns M + 1 apart) or strided both ways (2: every
 * other element of rows 2 N + 3 apart). */
static void check_gemm_layout(int64_t M, int64_t N, int64_t K, int64_t K1,
                              int colc, int bcols, uint64_t *seed)
{
    int64_t total = K * K1, sam = total + 3;
    int64_t sbk = bcols ? 1 : N + 5, sbn = bcols ? total + 5 : 1;
    int64_t scm = colc == 0 ? N + 2 : colc == 1 ? 1 : 2 * N + 3;
    int64_t scn = colc == 0 ? 1 : colc == 1 ? M + 1 : 2;
    double *a = malloc(sizeof *a * (size_t)(M * sam));
    double *b = malloc(sizeof *b * (size_t)(total * sbk + N * sbn));
    double *c = malloc(sizeof *c * (size_t)(M * (2 * N + 3) + N * (M + 1)));
    if (!a || !b || !c) {
        EB_CHECK(0, "out of memory");
        free(a), free(b), free(c);
        return;
    }
    for (int64_t i = 0; i < M * sam; i++)
        a[i] = rand_unit(seed);
    for (int64_t i = 0; i < total * sbk + N * sbn; i++)
        b[i] = rand_unit(seed);
    /* k = k1 K + kk: A's k1 blocks K apart, B's K rows (or elements)
     * apart. */
    eb_gemm_k k = {K1, K, 1, K * sbk, sbk};
    eb_kern_small_gemm(M, N, K, a, sam, b, sbn, &k, c, scm, scn);
    double worst = 0;
    for (int64_t m = 0; m < M; m++)
        for (int64_t n = 0; n < N; n++) {
            double ref = 0, mag = 0;
            for (int64_t f = 0; f < total; f++) {
                double x = a[m * sam + f] * b[f * sbk + n * sbn];
                ref += x;
                mag += fabs(x);
            }
            double e = fabs(c[m * scm + n * scn] - ref) / (mag > 0 ? mag : 1);
            worst = e > worst ? e : worst;
        }
    EB_CHECK(worst <= 1e-13, "small gemm %lld x %lld x %lld (K1 %lld, B %s, "
             "C %s): relative error %g", (long long)M, (long long)N,
             (long long)K, (long long)K1, bcols ? "column" : "row",
             colc == 0 ? "row" : colc == 1 ? "column" : "strided", worst);
    free(a);
    free(b);
    free(c);
}

/* C's of 1 to 8 rows and B's from 10^3 to 10^5 elements (the few-rows
 * streaming kernel takes M <= 6, N >= 24 and B of 2^16 elements or more;
 * the others take the register-blocked kernels), odd N (a masked tail),
 * odd K (an unpaired row), a two-level K, every C layout. */
static void test_few_rows(void)
{
    static const struct {
        int64_t M, N, K, K1;
    } shapes[] = {
        {4, 8192, 9, 1}, {1, 301, 257, 1}, {2, 257, 300, 1}, {3, 24, 4001, 1},
        {4, 1031, 65, 2}, {5, 513, 131, 1}, {6, 97, 700, 1}, {7, 300, 250, 1},
        {8, 100, 700, 1}, {4, 23, 4000, 1}, {6, 40, 33, 1}, {4, 64, 1025, 3},
    };
    uint64_t seed = 99;
    for (size_t t = 0; t < sizeof shapes / sizeof shapes[0]; t++)
        for (int colc = 0; colc <= 2; colc++)
            check_gemm_layout(shapes[t].M, shapes[t].N, shapes[t].K,
                              shapes[t].K1, colc, 0, &seed);
}

/* The short-K few-rows kernel (eb_kern_small_gemm_few_k: M <= 6, or up
 * to 12 where the AVX-512 kernels run; B's columns contiguous, K1 K <=
 * 64, B of 2^16 elements or more): N's tails of 0 to 7 past the 8-column
 * strips (a 4-column strip, then single columns), K of 1 to 64 in one or
 * two levels, every C layout; K past 8 with row-major C in slices of 8
 * rows over panels of 4096 columns (three whole panels and a tail of 1 or
 * 7, K of 9 and 17: slices of 8, 8, 1); K1 K of 65, and M of 7 to 12
 * without AVX-512, take the other kernels. */
static void test_few_k(void)
{
    static const struct {
        int64_t M, N, K, K1;
    } shapes[] = {
        {1, 65543, 1, 1}, {2, 8199, 9, 1},   {3, 19683, 27, 1},
        {4, 4100, 16, 2}, {5, 1031, 64, 1},  {6, 2053, 33, 1},
        {3, 8196, 8, 1},  {4, 16389, 4, 1},  {6, 1030, 65, 1},
        {7, 2048, 32, 1}, {2, 3001, 11, 3},  {5, 9000, 8, 1},
        {4, 12289, 17, 1}, {1, 12295, 9, 1},
        /* 9 and 12 rows: the AVX-512 few-K kernel where it runs. */
        {9, 8197, 27, 1}, {12, 5003, 17, 1}, {9, 6001, 9, 3},
    };
    uint64_t seed = 31;
    for (size_t t = 0; t < sizeof shapes / sizeof shapes[0]; t++)
        for (int colc = 0; colc <= 2; colc++)
            check_gemm_layout(shapes[t].M, shapes[t].N, shapes[t].K,
                              shapes[t].K1, colc, 0, &seed);
    EB_CHECK(eb_kern_small_gemm_few_k(3, 19683, 27, 1) &&
                 !eb_kern_small_gemm_few_k(3, 19683, 27, 2) &&
                 !eb_kern_small_gemm_few_k(3, 19683, 65, 1) &&
                 !eb_kern_small_gemm_few_k(3, 1000, 27, 1),
             "few_k predicate");
    /* Rows past 6 only where the AVX-512 kernels run (up to 12 rows),
     * as eb_kern_small_gemm dispatches them. */
    int wide = eb_gemm512_usable() != 0;
    EB_CHECK(eb_kern_few_k_rows_max() == (wide ? EB_FEW_K512_ROWS : 6) &&
                 eb_kern_small_gemm_few_k(7, 19683, 27, 1) == wide &&
                 eb_kern_small_gemm_few_k(9, 19683, 27, 1) == wide &&
                 eb_kern_small_gemm_few_k(12, 19683, 27, 1) == wide &&
                 !eb_kern_small_gemm_few_k(13, 19683, 27, 1),
             "few_k predicate past 6 rows (AVX-512 kernels: %d)", wide);
}

/* A GEMM with a side past SKINNY_MAX_LONG (8192) is the own kernel's
 * where the other side is at most eb_kern_few_k_rows_max() rows (6, or
 * 12 where the AVX-512 kernels run) against a K of at most 64 and B's
 * long side contiguous (the short-K few-rows kernel), else BLAS's (or
 * the own kernel's where it takes every skinny GEMM: KIND_SKINNY). */
static void test_few_k_plans(void)
{
    static const struct {
        const char *fs, *sizes;
        eb_kind want;
        int64_t rows; /* > 0: the own kernel's up to that many rows */
    } c[] = {
        {"bmk,bkn->bmn", "b=3,m=3,k=27,n=19683", EB_KIND_SMALL_GEMM, 0},
        {"mk,kn->mn", "m=6,k=64,n=9000", EB_KIND_SMALL_GEMM, 0},
        {"mk,nk->mn", "m=3,k=27,n=19683", EB_KIND_GEMM, 0},
        {"mk,kn->mn", "m=3,k=65,n=19683", KIND_SKINNY, 0},
        {"mk,kn->mn", "m=8,k=27,n=19683", KIND_SKINNY, 8},
        {"mk,kn->mn", "m=13,k=27,n=19683", KIND_SKINNY, 13},
        /* A batch in both operands (gm_queen's 243 x (9 x 19683 x 27)). */
        {"bmk,bkn->bmn", "b=3,m=9,k=27,n=19683", KIND_SKINNY, 9},
    };
    /* A long GEMM whose K is split in B (v outermost, D innermost: a
     * two-level K the own kernel reads in place) and whose B is strided
     * along n stays the own kernel's: dgemm cannot run that layout (it
     * went there and gave wrong sums; MERA open's trace step 16). Both
     * modes against the naive sum, 5 and 11 rows. */
    modes_match_naive("vDE,vflqcaBD->afElqcB",
                      "v=6,D=4,E=5,f=2,l=2,q=22,c=5,a=9,B=7", 41);
    modes_match_naive("vDE,vflqcaBD->afElqcB",
                      "v=6,D=4,E=11,f=2,l=2,q=22,c=5,a=9,B=7", 43);
    for (size_t q = 0; q < sizeof c / sizeof c[0]; q++) {
        eb_kind want = c[q].rows > 0 && c[q].rows <= eb_kern_few_k_rows_max()
                           ? EB_KIND_SMALL_GEMM
                           : want_kind(c[q].want);
        eb_step_desc d;
        if (eager_first_step(c[q].fs, c[q].sizes, &d))
            EB_CHECK(d.plan.kind == want, "%s (%s): kernel %s, want %s",
                     c[q].fs, c[q].sizes, eb_kind_name(d.plan.kind),
                     eb_kind_name(want));
    }
}

/* The row kernel's column chunks (12 wide while more than 16 remain, then
 * the rest; the last vector of a chunk shifted left) and row blocks (3 or
 * 4 rows, then the rest): every N from 1 to 41 on 7 and 13 rows, a K of
 * 19 in one or three blocks, C row-major and strided; and a strided C
 * wider than the stack tile. */
static void test_row_chunks(void)
{
    uint64_t seed = 7;
    for (int64_t N = 1; N <= 41; N++)
        for (int64_t M = 7; M <= 13; M += 6)
            for (int64_t K1 = 1; K1 <= 3; K1 += 2) {
                check_gemm_layout(M, N, 19, K1, 0, 0, &seed);
                check_gemm_layout(M, N, 19, K1, 2, 0, &seed);
            }
    /* C strided both ways and wider than a tile: tiles of 256 columns
     * (a tail of 20 and of 76) by 4 rows (a tail of 1). */
    check_gemm_layout(5, 1300, 7, 2, 2, 0, &seed);
    check_gemm_layout(37, 1100, 19, 1, 2, 0, &seed);
}

/* eb_kern_gemm_wrows against a plain loop: A[m][k][w] with padded rows
 * and runs (sak = W + 3, sam = K sak + 1), B[k][w][n] (sbw = N + 2, sbk =
 * W sbw + 5), C[m][w][n] (scw = N + 1, scm = W scw + 2): row blocks of 1
 * to 4 rows and their tails, N of 1 to 16 (masked, shifted last
 * vectors), K of 1, 12 and 128, W below, at and past the pack's 16. */
/* One shape of test_wrows: 1 right, 0 wrong (reported), -1 no memory. */
static int check_wrows(int64_t M, int64_t N, int64_t K, int64_t W,
                       uint64_t *seed)
{
    int64_t sak = W + 3, sam = K * sak + 1;
    int64_t sbw = N + 2, sbk = W * sbw + 5;
    int64_t scw = N + 1, scm = W * scw + 2;
    size_t na = (size_t)(M * sam), nb = (size_t)(K * sbk);
    size_t nc = (size_t)(M * scm);
    double *a = malloc(na * sizeof *a), *b = malloc(nb * sizeof *b);
    double *c = malloc(nc * sizeof *c);
    if (!a || !b || !c) {
        EB_CHECK(0, "out of memory");
        free(a), free(b), free(c);
        return -1;
    }
    for (size_t x = 0; x < na; x++)
        a[x] = rand_unit(seed);
    for (size_t x = 0; x < nb; x++)
        b[x] = rand_unit(seed);
    for (size_t x = 0; x < nc; x++)
        c[x] = 7.0; /* padding must stay */
    eb_kern_gemm_wrows(M, N, K, W, a, sam, sak, b, sbk, sbw, c, scm, scw);
    double worst = 0;
    int pad = 0;
    for (int64_t m = 0; m < M; m++)
        for (int64_t w = 0; w < W; w++) {
            for (int64_t n = 0; n < N; n++) {
                double ref = 0, mag = 0;
                for (int64_t k = 0; k < K; k++) {
                    double x = a[m * sam + k * sak + w] *
                               b[k * sbk + w * sbw + n];
                    ref += x;
                    mag += fabs(x);
                }
                double e = fabs(c[m * scm + w * scw + n] - ref) /
                           (mag > 0 ? mag : 1);
                worst = e > worst ? e : worst;
            }
            pad |= c[m * scm + w * scw + N] != 7.0;
        }
    free(a);
    free(b);
    free(c);
    if (worst <= 1e-13 && !pad)
        return 1;
    EB_CHECK(0, "wrows %lld x %lld x %lld, W %lld: relative error %g, "
             "padding %s", (long long)M, (long long)N, (long long)K,
             (long long)W, worst, pad ? "written" : "kept");
    return 0;
}

static void test_wrows(void)
{
    static const int64_t Ms[] = {1, 2, 3, 4, 5, 7, 13};
    static const int64_t Ks[] = {1, 12, 128};
    static const int64_t Ws[] = {1, 5, 16, 37};
    uint64_t seed = 5;
    int64_t shapes = 0, bad = 0;
    for (size_t i = 0; i < sizeof Ms / sizeof Ms[0]; i++)
        for (int64_t N = 1; N <= EB_WROWS_MAX_N; N++)
            for (size_t t = 0; t < sizeof Ks / sizeof Ks[0]; t++)
                for (size_t u = 0; u < sizeof Ws / sizeof Ws[0]; u++) {
                    if ((N + (int64_t)i + (int64_t)u) % 3 && Ks[t] == 128)
                        continue; /* a third of the long-K shapes */
                    int r = check_wrows(Ms[i], N, Ks[t], Ws[u], &seed);
                    if (r < 0)
                        return;
                    shapes++;
                    bad += !r;
                }
    EB_CHECK(bad == 0 && shapes > 500, "wrows: %lld of %lld shapes wrong",
             (long long)bad, (long long)shapes);
}

/* The k-vector kernel (both operands contiguous along k, a side of C of
 * at most 32): sides 1 to 9 and 19 (blocks of 3 rows by 4 columns and
 * every smaller edge block), runs of K of 8, 19 (a masked tail) and 130
 * (two slices of a one-level K), one or five rows k1 (slices of several
 * rows, added to C), every C layout; and 19 x 60 (the other side long). */
static void test_kvec(void)
{
    static const int64_t sides[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 19};
    static const int64_t ks[] = {8, 19, 130};
    uint64_t seed = 11;
    for (size_t i = 0; i < sizeof sides / sizeof sides[0]; i++)
        for (size_t t = 0; t < sizeof ks / sizeof ks[0]; t++)
            for (int64_t K1 = 1; K1 <= 5; K1 += 4)
                for (int colc = 0; colc <= 2; colc++) {
                    int64_t M = sides[i], N = sides[(i + 3) % 10];
                    check_gemm_layout(M, N, ks[t], K1, colc, 1, &seed);
                }
    check_gemm_layout(19, 60, 19, 5, 0, 1, &seed);
    check_gemm_layout(60, 19, 19, 5, 1, 1, &seed);
    /* A the shorter side: B's rows outer, slices of 16384 / M contracted
     * elements, here two of them (one level: 3276 of 3500; rows k1: 18 of
     * 30), the second added to C; and the same transposed. */
    for (int colc = 0; colc <= 2; colc++) {
        check_gemm_layout(5, 40, 3500, 1, colc, 1, &seed);
        check_gemm_layout(7, 33, 130, 30, colc, 1, &seed);
    }
}

/*
 * Builds fs with sizes, runs it in both modes against the naive reference
 * along the chain path (0, 1), then the next input with the result
 * (0, last), and describes trace's plan of it into d (room for 8 steps).
 * Returns the number of steps, or -1 when the instance did not build.
 */
static int chain_trace(const char *fs, const char *sizes, uint64_t seed,
                       eb_step_desc *d)
{
    tu_sizes sp = {sizes};
    eb_instance *inst = tu_instance(fs, tu_spec_size, &sp);
    EB_CHECK(inst != NULL, "%s builds", fs);
    if (!inst)
        return -1;
    eb_pair steps[8];
    eb_path path = {.strategy = "chain", .steps = steps,
                    .num_steps = inst->num_tensors - 1};
    steps[0] = (eb_pair){0, 1};
    for (int s = 1; s < path.num_steps; s++)
        steps[s] = (eb_pair){0, inst->num_tensors - s - 1};
    for (int m = 0; m < EB_MODE_COUNT; m++) {
        double e = tu_mode_vs_naive(inst, &path, seed, (eb_mode)m, NULL);
        EB_CHECK(e >= 0 && e <= 1e-12, "%s %s: rel err %g", fs,
                 eb_mode_name((eb_mode)m), e);
    }
    int64_t arena;
    eb_error err;
    eb_fuse_opts fuse = eb_fuse_default_opts();
    EB_CHECK(eb_trace_describe(inst, &path, &fuse, d, &arena, &err) == EB_OK,
             "%s: trace compiles", fs);
    int n = path.num_steps;
    eb_instance_destroy(inst);
    return n;
}

/*
 * A chain of skinny GEMMs, each step's input matrix A times the previous
 * result B (the pair order of matrix-chain paths): trace lays the
 * intermediates out short side first, so that every step writes C with
 * its long side contiguous and runs on the own kernel with nothing
 * permuted. Short sides 23 and 29, long sides from 33 to 45 (the naive
 * reference loops over all labels at once), the last step's output order
 * fixed by the instance both ways. Results against the naive reference
 * in both modes (with the team main sets).
 */
static void test_skinny_chain(void)
{
    static const struct {
        const char *fs, *sizes;
    } chains[] = {
        {"Ua,ab,bc,cd->Ud", "U=23,a=33,b=40,c=45,d=37"},
        {"Ua,ab,bc,cd->dU", "U=29,a=35,b=33,c=41,d=34"},
    };
    for (size_t c = 0; c < sizeof chains / sizeof chains[0]; c++) {
        eb_step_desc d[8];
        int nsteps = chain_trace(chains[c].fs, chains[c].sizes, 31 + c, d);
        /* Every step but the last, whose output order is the instance's:
         * the own kernel, nothing permuted. */
        for (int s = 0; s + 1 < nsteps; s++) {
            const eb_plan *p = &d[s].plan;
            EB_CHECK(p->kind == EB_KIND_SMALL_GEMM && !p->prep[0] &&
                         !p->prep[1] && !p->post,
                     "%s step %d: %s, %d + %d preparations, post %d",
                     chains[c].fs, s, eb_kind_name(p->kind), p->prep[0],
                     p->prep[1], p->post);
        }
    }
}

/*
 * The own kernel computes a C whose m side is contiguous as C^T = B^T A^T:
 * an A it prepares whole is laid out k-major (contract.c, evaluate), so
 * that the kernel reads A^T's rows contiguous instead of copying its
 * panels; where A is large enough for a blocked preparation (eb_plan.bp,
 * str_mps's 1881 x 19 x 19 steps) the blocks stay [m][k] (a k-major
 * layout under the blocks wrote past them). Odd sizes, C column-major in
 * m with n short and longer: the plan and the result against the naive
 * reference, both modes (and a chain through such a step).
 */
static void test_kmajor_prep(void)
{
    static const struct {
        const char *fs, *sizes;
        int blocked; /* 1: blocked preparation, 0: k-major whole */
    } nets[] = {
        {"ija,jb->bia", "i=37,j=9,a=5,b=3", 0},
        {"ija,jb->bia", "i=41,j=7,a=3,b=26", 0},
        {"ajic,jb->bcia", "i=17,j=5,a=3,b=5,c=2", 0},
        {"jil,ih->hjl", "j=56,i=19,l=19,h=19", 0},
        {"jil,ih->hjl", "j=29,i=19,l=19,h=19", 0},
        {"jil,ih->hjl", "j=99,i=19,l=19,h=19", 1},
        {"jil,ih->hjl", "j=113,i=19,l=19,h=23", 1},
    };
    for (size_t c = 0; c < sizeof nets / sizeof nets[0]; c++) {
        tu_sizes sp = {nets[c].sizes};
        eb_instance *inst = tu_instance(nets[c].fs, tu_spec_size, &sp);
        EB_CHECK(inst != NULL, "%s builds", nets[c].fs);
        if (!inst)
            continue;
        eb_pair steps[1] = {{0, 1}};
        eb_path path = {.strategy = "test", .num_steps = 1, .steps = steps};
        for (int m = 0; m < EB_MODE_COUNT; m++) {
            double e = tu_mode_vs_naive(inst, &path, 61 + c, (eb_mode)m, NULL);
            EB_CHECK(e >= 0 && e <= 1e-12, "%s (%s) %s: rel err %g",
                     nets[c].fs, nets[c].sizes, eb_mode_name((eb_mode)m), e);
        }
        eb_step_desc d;
        eb_error err;
        if (eb_eager_describe(inst, &path, &d, &err) == EB_OK) {
            const eb_plan *p = &d.plan;
            int ok = nets[c].blocked
                         ? p->bp && p->sak == 1 && p->sam == p->K
                         : p->prep[0] && p->sam == 1 && p->sak == p->M;
            EB_CHECK(p->kind == EB_KIND_SMALL_GEMM && p->scm == 1 && ok,
                     "%s (%s): %s, bp %d, prep A %d, scm %lld, sam %lld, "
                     "sak %lld",
                     nets[c].fs, nets[c].sizes, eb_kind_name(p->kind), p->bp,
                     p->prep[0], (long long)p->scm, (long long)p->sam,
                     (long long)p->sak);
        }
        eb_instance_destroy(inst);
    }
    eb_step_desc dd[8];
    chain_trace("jil,ih,jhk->kl", "j=6,i=5,l=7,h=3,k=4", 71, dd);
}

/*
 * A chain of products of one large tensor by small factors (gm_queen's
 * five 43 M-element steps by 3 x 3 factors): trace keeps the tensor's
 * label order from step to step (trace.c, plan_layouts: nothing
 * contracted, operands in the output's order; layout_cost: a step the
 * engine runs in tiles costs its output), and a factor whose labels lie
 * among the short innermost dims is expanded over them into a row
 * (contract.c, plan_engine): every step runs rows, but one where the
 * instance's output order differs from the input's (the permutation made
 * once). Odd sizes, results against the naive reference in both modes.
 */
static void test_broadcast_chain(void)
{
    static const struct {
        const char *fs, *sizes;
        int tiled; /* steps allowed to run in tiles */
    } nets[] = {
        {"abcdefgh,gh,eh,cg,bd->abcdefgh",
         "a=5,b=3,c=3,d=3,e=3,f=3,g=3,h=3", 0},
        {"abcdefgh,gh,eh,cg,bd->hgfedcba",
         "a=7,b=3,c=2,d=3,e=5,f=3,g=3,h=2", 1},
    };
    for (size_t c = 0; c < sizeof nets / sizeof nets[0]; c++) {
        eb_step_desc d[8];
        int n = chain_trace(nets[c].fs, nets[c].sizes, 51 + c, d), tiled = 0;
        for (int s = 0; s < n; s++) {
            const eb_plan *p = &d[s].plan;
            EB_CHECK((p->kind == EB_KIND_MUL || p->kind == EB_KIND_OUTER) &&
                         !p->post,
                     "%s step %d: %s, post %d", nets[c].fs, s,
                     eb_kind_name(p->kind), p->post);
            tiled += p->ew.mode != EB_PERM_ROW;
        }
        EB_CHECK(n == 4 && tiled == nets[c].tiled,
                 "%s: %d steps, %d in tiles, want 4 and %d", nets[c].fs, n,
                 tiled, nets[c].tiled);
    }
}

/*
 * Eager's fixed output order with a short side of 21 to 31 along C's
 * contiguous dim (mid_skinny): the own kernel, whose rows must be the
 * short side, writes C long side contiguous into scratch and a post
 * permutation stores it in the fixed order, where K >= POST_MIN_K (128)
 * and the long side's operand is contiguous along it (str_matrix_chain's
 * 480 x 21 x 272 with C [x][u]); below that K, BLAS writes C in place.
 */
static void test_mid_skinny_post(void)
{
    static const struct {
        const char *fs, *sizes;
        int post;
    } nets[] = {
        {"ji,kj->ik", "i=301,j=150,k=29", 1},
        {"ji,jk->ik", "i=203,j=131,k=21", 1},
        {"ij,jk->ki", "i=23,j=150,k=301", 1},
        {"ji,kj->ik", "i=301,j=127,k=29", 0},
    };
    for (size_t c = 0; c < sizeof nets / sizeof nets[0]; c++) {
        tu_sizes sp = {nets[c].sizes};
        eb_instance *inst = tu_instance(nets[c].fs, tu_spec_size, &sp);
        EB_CHECK(inst != NULL, "%s builds", nets[c].fs);
        if (!inst)
            continue;
        eb_pair steps[1] = {{0, 1}};
        eb_path path = {.strategy = "test", .num_steps = 1, .steps = steps};
        eb_step_desc d;
        eb_error err;
        EB_CHECK(eb_eager_describe(inst, &path, &d, &err) == EB_OK,
                 "%s (%s): eager plans", nets[c].fs, nets[c].sizes);
        const eb_plan *p = &d.plan;
        int t = p->scn != 1 && p->scm == 1;
        int64_t rows = t ? p->N : p->M;
        if (eb_contract_own_wider())
            /* The own kernel in either orientation, C written in place. */
            EB_CHECK(p->kind == EB_KIND_SMALL_GEMM && !p->post &&
                         !p->prep[0] && !p->prep[1],
                     "%s (%s): %s, post %d, preparations %d + %d",
                     nets[c].fs, nets[c].sizes, eb_kind_name(p->kind),
                     p->post, p->prep[0], p->prep[1]);
        else if (nets[c].post)
            EB_CHECK(p->kind == EB_KIND_SMALL_GEMM && p->post &&
                         rows == (p->M < p->N ? p->M : p->N) &&
                         !p->prep[0] && !p->prep[1],
                     "%s (%s): %s, post %d, kernel rows %lld, preparations "
                     "%d + %d",
                     nets[c].fs, nets[c].sizes, eb_kind_name(p->kind),
                     p->post, (long long)rows, p->prep[0], p->prep[1]);
        else
            EB_CHECK(p->kind == EB_KIND_GEMM && !p->post,
                     "%s (%s): %s, post %d", nets[c].fs, nets[c].sizes,
                     eb_kind_name(p->kind), p->post);
        for (int m = 0; m < EB_MODE_COUNT; m++) {
            double e = tu_mode_vs_naive(inst, &path, 71 + c, (eb_mode)m, NULL);
            EB_CHECK(e >= 0 && e <= 1e-12, "%s (%s) %s: rel err %g",
                     nets[c].fs, nets[c].sizes, eb_mode_name((eb_mode)m), e);
        }
        eb_instance_destroy(inst);
    }
}

/*
 * A product by a small factor whose labels sit just outside the output's
 * innermost dims (gm_queen's 3 x 3 factors on blocks of 27-element rows):
 * the engine could run it as rows, but rows of 35 elements cost a pass of
 * its loop nest each; the factor is expanded over the inner dims (945
 * elements) and the step runs rows of 945 (contract.c, plan_engine,
 * engine_slow). Below 64 KiB of output the short rows stay (a few rows,
 * nothing to gain). Both modes against the naive reference, and the plans
 * of both.
 */
static void test_short_rows(void)
{
    static const struct {
        const char *sizes;
        int expand;
    } nets[] = {
        {"a=5,b=3,c=3,d=3,e=3,f=3,g=5,h=7", 1},
        {"a=1,b=2,c=3,d=3,e=3,f=3,g=5,h=7", 0},
    };
    const char *fs = "abcdefgh,df->abcdefgh";
    for (size_t c = 0; c < sizeof nets / sizeof nets[0]; c++) {
        eb_step_desc d[2];
        if (chain_trace(fs, nets[c].sizes, 81 + c, d) != 1)
            continue;
        tu_sizes sp = {nets[c].sizes};
        eb_instance *inst = tu_instance(fs, tu_spec_size, &sp);
        eb_pair steps[1] = {{0, 1}};
        eb_path path = {.strategy = "test", .num_steps = 1, .steps = steps};
        eb_error err;
        EB_CHECK(inst && eb_eager_describe(inst, &path, &d[1], &err) == EB_OK,
                 "%s (%s): eager plans", fs, nets[c].sizes);
        eb_instance_destroy(inst);
        for (int m = 0; m < 2; m++) {
            const eb_plan *p = &d[m].plan;
            int64_t row = p->ew.rank ? p->ew.shape[p->ew.rank - 1] : 0;
            int ok = nets[c].expand
                         ? p->prep[1] && p->prep_elems[1] == 945 && row == 945
                         : !p->prep[1] && row == 35;
            EB_CHECK(eb_kind_engine(p->kind) && p->ew.mode == EB_PERM_ROW &&
                         !p->prep[0] && ok,
                     "%s (%s) %s: %s, mode %d, rows of %lld, prep %d %d (%lld)",
                     fs, nets[c].sizes, m ? "eager" : "trace",
                     eb_kind_name(p->kind), (int)p->ew.mode, (long long)row,
                     p->prep[0], p->prep[1], (long long)p->prep_elems[1]);
        }
    }
    /* In a chain, trace keeps the large tensor's order with the factors
     * expanded (trace.c, layout_cost: short rows cost like tiles) rather
     * than move a factor's labels outermost (rows of 35 then, nothing
     * prepared). */
    eb_step_desc d[2];
    if (chain_trace("abcdefgh,df,eg->abcdefgh", nets[0].sizes, 83, d) != 2)
        return;
    for (int s = 0; s < 2; s++) {
        const eb_plan *p = &d[s].plan;
        int64_t row = p->ew.rank ? p->ew.shape[p->ew.rank - 1] : 0;
        EB_CHECK(p->ew.mode == EB_PERM_ROW && row >= 128,
                 "abcdefgh,df,eg chain, step %d: mode %d, rows of %lld", s,
                 (int)p->ew.mode, (long long)row);
    }
}

/*
 * An outer product whose second operand lies in another order and lacks
 * one of the first's labels (gm_queen eager's two 14 M-element operands
 * into 43 M, 16 dims of 3): eager permutes that operand alone into the
 * output's order (at most half the output) and runs XROW rows, the first
 * operand's elements expanded over the short free label (contract.c,
 * plan_engine), where the output holds 64 KiB or more. Free labels of 2,
 * 3, 5 and 9; both modes against the naive reference.
 */
static void test_outer_xrow(void)
{
    static const struct {
        const char *sizes;
        int xrow;
    } c[] = {
        {"a=5,b=4,c=7,d=3,e=43,f=3", 1},
        {"a=3,b=5,c=2,d=4,e=67,f=2", 1},
        {"a=2,b=3,c=5,d=2,e=29,f=5", 1},
        {"a=4,b=2,c=3,d=3,e=15,f=9", 1},
        /* an output under 64 KiB keeps its plan */
        {"a=2,b=2,c=2,d=2,e=40,f=3", 0},
    };
    const char *fs = "abcde,ecfab->abcdef";
    for (size_t q = 0; q < sizeof c / sizeof c[0]; q++) {
        eb_step_desc d;
        if (!eager_first_step(fs, c[q].sizes, &d))
            continue;
        const eb_plan *p = &d.plan;
        int ok = c[q].xrow ? p->ew.mode == EB_PERM_XROW && p->prep[1]
                           : p->ew.mode != EB_PERM_XROW && !p->prep[1];
        EB_CHECK(eb_kind_engine(p->kind) && !p->prep[0] && ok,
                 "%s (%s) eager: %s, mode %d, prep %d %d", fs, c[q].sizes,
                 eb_kind_name(p->kind), (int)p->ew.mode, p->prep[0],
                 p->prep[1]);
        modes_match_naive(fs, c[q].sizes, 91 + q);
    }
}

/*
 * Trace's layout search (trace.c, improve_layouts and atom_orders): a
 * batched product whose consumer reads its output as a matrix with the
 * producer's n group split around its m group (lm's batched 16^3 steps
 * before a 7984 x 16 x 64 GEMM): the intermediate is laid out so that
 * neither step permutes anything (the consumer reads the contracted group
 * as two levels). Odd sizes; the second network's last step has its
 * output order fixed the other way, and a batch label the consumer keeps.
 * Results against the naive reference in both modes.
 */
static void test_layout_search(void)
{
    static const struct {
        const char *fs, *sizes;
    } nets[] = {
        {"tak,tkuv,ave->tue", "t=37,a=6,k=5,u=5,v=7,e=9"},
        {"tak,tkuv,ave->eut", "t=41,a=3,k=7,u=4,v=5,e=6"},
    };
    eb_step_desc d[8];
    for (size_t c = 0; c < sizeof nets / sizeof nets[0]; c++) {
        if (chain_trace(nets[c].fs, nets[c].sizes, 41 + c, d) != 2)
            continue;
        /* The producer writes its output in place; the consumer reads it
         * in place (the last step may permute its own output, whose order
         * the instance fixes). */
        const eb_plan *p0 = &d[0].plan, *p1 = &d[1].plan;
        EB_CHECK(!p0->prep[0] && !p0->prep[1] && !p0->post && !p1->prep[0],
                 "%s: producer %s %d + %d preparations, post %d; consumer "
                 "prepares its left operand %d",
                 nets[c].fs, eb_kind_name(p0->kind), p0->prep[0], p0->prep[1],
                 p0->post, p1->prep[0]);
    }
    /* Ties in moved elements go to the layout on which the own kernel
     * copies nothing (trace.c, kernel_copies): a chain of small square
     * GEMMs whose intermediate could be laid out either way writes C with
     * B's rows contiguous along n (before: C column-major, B's panels
     * copied element by element). Where the BLAS has small-matrix
     * kernels the steps are BLAS's, which copies nothing either way. */
    if (chain_trace("ij,jk,kl->il", "i=36,j=44,k=40,l=52", 45, d) != 2)
        return;
    int blas = eb_blas_small_kernels();
    for (int s = 0; s < 2; s++) {
        const eb_plan *p = &d[s].plan;
        int rows = p->scn == 1 && p->sbn == 1, cols = p->scm == 1 && p->sam == 1;
        EB_CHECK(p->kind == (blas ? EB_KIND_GEMM : EB_KIND_SMALL_GEMM) &&
                     !p->prep[0] && !p->prep[1] && !p->post &&
                     (blas || rows || cols),
                 "chain step %d: %s, sbn %lld scn %lld sam %lld scm %lld", s,
                 eb_kind_name(p->kind), (long long)p->sbn, (long long)p->scn,
                 (long long)p->sam, (long long)p->scm);
    }
}

/*
 * A trace program doing less work than eb_fuse_opts.solo_work runs on the
 * caller alone (engine_threads 1), one above it or with solo_work 0 on
 * the team, eager always on the team; OpenBLAS's thread count is the
 * same after the runs. Chains of three square matrices: 64 (two products
 * of 2^18 multiply-adds, under the default 2^20) and 96 (2 x 96^3).
 * Results against the naive reference every way. Run with the team set.
 */
static void test_solo(void)
{
    const struct {
        const char *sizes;
        int small;
    } sz[] = {{"i=64,j=64,k=64,l=64", 1}, {"i=96,j=96,k=96,l=96", 0},
                 {"i=5,j=3,k=7,l=2", 1}};
    int team = eb_team_size(tu_team), blas = eb_blas_threads();
    for (size_t c = 0; c < sizeof sz / sizeof *sz; c++) {
        tu_sizes sp = {sz[c].sizes};
        eb_instance *inst = tu_instance("ij,jk,kl->il", tu_spec_size, &sp);
        EB_CHECK(inst != NULL, "%s builds", sz[c].sizes);
        if (!inst)
            continue;
        eb_pair steps[2];
        eb_path path;
        tu_seq_path(&path, steps, 3);
        for (int solo = 0; solo <= 1; solo++)
            for (int m = 0; m < EB_MODE_COUNT; m++) {
                eb_fuse_opts fuse = eb_fuse_default_opts();
                if (!solo)
                    fuse.solo_work = 0;
                tu_exec_info info = {-1, -2, -1};
                double e = tu_mode_vs_naive_opts(inst, &path, 7, (eb_mode)m,
                                                 &fuse, NULL, &info);
                int threads = info.engine_threads;
                int want = m == EB_MODE_TRACE && solo && sz[c].small
                               ? 1 : team;
                EB_CHECK(e >= 0 && e <= 1e-12 && threads == want &&
                             eb_blas_threads() == blas,
                         "%s %s solo_work %g, team of %d: rel err %g, "
                         "engine threads %d (want %d), OpenBLAS threads %d "
                         "(%d before)", sz[c].sizes,
                         eb_mode_name((eb_mode)m), fuse.solo_work, team, e,
                         threads, want, eb_blas_threads(), blas);
            }
        eb_instance_destroy(inst);
    }
}

/*
 * Concurrent lanes (lanes.h): eight matrices multiplied as two chains of
 * three products joined by a seventh (path pairs as opt_einsum gives
 * them), also with a batch label throughout; twelve as three such units
 * joined by two more products, the team's threads claiming units; a
 * chain of products (no step joins two step results) for contrast. The
 * reference is the naive loop over all labels at once, or the stepwise
 * one where that loop would be too long (the sixteen). With a team
 * and small programs on it (solo_work 0), trace forks at the first join
 * (lanes_at 6 and 9), with fusion as planned and forced (groups inside the
 * lanes); with the default options these programs run on the caller
 * alone; without a team, never. Eager never forks. Results against the
 * naive reference every way.
 */
static void test_lanes_exec(void)
{
    const struct {
        const char *fs, *sizes;
        int npairs;
        eb_pair pairs[16];
        int fork; /* with a team, small programs on it */
        int unfused; /* 1: forced fusion straddles the units (no fork) */
    } sz[] = {
        {"ab,bc,cd,de,ef,fg,gh,hi->ai",
         "a=5,b=6,c=5,d=4,e=5,f=6,g=5,h=4,i=5", 7,
         {{0, 1}, {0, 1}, {4, 5}, {0, 1}, {0, 1}, {1, 2}, {0, 1}}, 6, 0},
        {"zab,zbc,zcd,zde,zef,zfg,zgh,zhi->zai",
         "z=3,a=4,b=5,c=4,d=3,e=4,f=5,g=4,h=3,i=4", 7,
         {{0, 1}, {0, 1}, {4, 5}, {0, 1}, {0, 1}, {1, 2}, {0, 1}}, 6, 0},
        {"ab,bc,cd,de->ae", "a=30,b=30,c=30,d=30,e=30", 3,
         {{0, 1}, {0, 1}, {0, 1}}, -1, 0},
        /* Three chains of three products (steps 0 1 6, 2 3 7, 4 5 8),
         * joined by 9 and 10: three units, the first read at step 9. */
        {"ab,bc,cd,de,ef,fg,gh,hi,ij,jk,kl,lm->am",
         "a=5,b=5,c=5,d=5,e=5,f=5,g=5,h=5,i=5,j=5,k=5,l=5,m=5", 11,
         {{0, 1}, {0, 10}, {1, 2}, {1, 8}, {2, 3}, {2, 6}, {0, 3}, {0, 2},
          {0, 1}, {0, 1}, {0, 1}},
         9, 0},
        {"zab,zbc,zcd,zde,zef,zfg,zgh,zhi,zij,zjk,zkl,zlm->zam",
         "z=2,a=4,b=4,c=4,d=4,e=4,f=4,g=4,h=4,i=4,j=4,k=4,l=4,m=4", 11,
         {{0, 1}, {0, 10}, {1, 2}, {1, 8}, {2, 3}, {2, 6}, {0, 3}, {0, 2},
          {0, 1}, {0, 1}, {0, 1}},
         9, 0},
        /* Three chains of four products, the first two joined at step
         * 12, then an outer product with x (a buffer larger than two
         * units' buffers) and x summed out, the third unit's result
         * read only at the last step: the units' block lives until
         * then. Fusion forced everywhere puts steps of the units in
         * groups with the steps after them: no units then. */
        {"ab,bc,cd,de,ef,fg,gh,hi,ij,jk,kl,lm,mn,no,op,x,x->ap",
         "a=16,b=16,c=16,d=16,e=16,f=16,g=16,h=16,i=16,j=16,k=16,l=16,"
         "m=16,n=16,o=16,p=16,x=5",
         16,
         {{0, 1}, {0, 15}, {0, 14}, {0, 13}, {0, 1}, {0, 11}, {0, 10},
          {0, 9}, {0, 1}, {0, 7}, {0, 6}, {0, 5}, {2, 3}, {0, 3}, {0, 2},
          {0, 1}},
         12, 1},
    };
    int team = eb_team_size(tu_team);
    for (size_t c = 0; c < sizeof sz / sizeof *sz; c++) {
        tu_sizes sp = {sz[c].sizes};
        eb_instance *inst = tu_instance(sz[c].fs, tu_spec_size, &sp);
        EB_CHECK(inst != NULL, "%s builds", sz[c].sizes);
        if (!inst)
            continue;
        eb_path path = {.strategy = "lanes",
                        .steps = (eb_pair *)sz[c].pairs,
                        .num_steps = sz[c].npairs};
        for (int v = 0; v < 3; v++)
            for (int m = 0; m < EB_MODE_COUNT; m++) {
                eb_fuse_opts fuse = eb_fuse_default_opts();
                if (v > 0)
                    fuse.solo_work = 0;
                if (v == 2) /* fusion wherever it can, as test_fuse */
                    fuse = (eb_fuse_opts){.min_bytes = 0,
                                          .block_bytes = 512,
                                          .force = 1};
                tu_exec_info info = {-1, -2, -1};
                double e = tu_mode_vs_naive_opts(inst, &path, 11, (eb_mode)m,
                                                 &fuse, NULL, &info);
                int want = m == EB_MODE_TRACE && v > 0 && team > 1 &&
                                   !(v == 2 && sz[c].unfused)
                               ? sz[c].fork : -1;
                EB_CHECK(e >= 0 && e <= 1e-12 && info.lanes_at == want,
                         "%s %s variant %d, team of %d: rel err %g, lanes "
                         "at %d (want %d)", sz[c].sizes,
                         eb_mode_name((eb_mode)m), v, team, e, info.lanes_at,
                         want);
            }
        eb_instance_destroy(inst);
    }
}

/*
 * Units share the caches (eb_fuse_opts.unit_min_bytes): two chains of
 * three batched products joined by a seventh, fusion past a size no
 * intermediate reaches (min_bytes) except inside a concurrent unit
 * (unit_min_bytes of one byte). With a team of two or more the program
 * forks at step 6 and fuses inside the units; without a team there are
 * no units and nothing is fused. Results against the naive reference in
 * both modes; eager never fuses.
 */
static void test_lanes_fuse(void)
{
    static const eb_pair pairs[] = {{0, 1}, {0, 1}, {4, 5}, {0, 1},
                                    {0, 1}, {1, 2}, {0, 1}};
    tu_sizes sp = {"z=24,a=5,b=6,c=7,d=5,e=6,f=7,g=5,h=6,i=7"};
    eb_instance *inst = tu_instance("zab,zbc,zcd,zde,zef,zfg,zgh,zhi->zai",
                                    tu_spec_size, &sp);
    EB_CHECK(inst != NULL, "the chains build");
    if (!inst)
        return;
    eb_path path = {.strategy = "lanes", .steps = (eb_pair *)pairs,
                    .num_steps = 7};
    eb_fuse_opts fuse = eb_fuse_default_opts();
    fuse.min_bytes = (int64_t)1 << 40;
    fuse.unit_min_bytes = 1;
    fuse.block_bytes = 2048;
    fuse.cache_bytes = 1 << 20;
    fuse.solo_work = 0;
    int team = eb_team_size(tu_team);
    for (int m = 0; m < EB_MODE_COUNT; m++) {
        tu_exec_info info = {-1, -2, -1};
        double e = tu_mode_vs_naive_opts(inst, &path, 13, (eb_mode)m, &fuse,
                                         NULL, &info);
        int units = m == EB_MODE_TRACE && team > 1;
        EB_CHECK(e >= 0 && e <= 1e-12 && info.lanes_at == (units ? 6 : -1) &&
                     (units ? info.fused_groups > 0 : info.fused_groups == 0),
                 "%s, team of %d: rel err %g, lanes at %d, %d fused groups",
                 eb_mode_name((eb_mode)m), team, e, info.lanes_at,
                 info.fused_groups);
    }
    eb_instance_destroy(inst);
}

int main(void)
{
    test_few_rows();
    test_few_k();
    test_few_k_plans();
    test_row_chunks();
    test_kvec();
    test_wrows();
    test_vec_prep_dtype();
    test_vec_gemv_plans();
    test_peel_big();
    test_peel_deep();
    test_peel_both();
    test_skinny_chain();
    test_layout_search();
    test_broadcast_chain();
    test_short_rows();
    test_outer_xrow();
    test_mid_skinny_post();
    test_kmajor_prep();
    test_cases();
    test_random();
    test_solo();
    test_lanes_exec();
    test_lanes_fuse();
    /* Again with two and three engine threads: the split kernels and
     * permutations must give the same results. */
    eb_error err;
    int blas_threads = eb_blas_threads();
    for (int threads = 2; threads <= 3; threads++) {
        if (eb_team_create(threads, &tu_team, &err) == EB_OK) {
            test_cases();
            test_skinny_chain();
            test_layout_search();
            test_broadcast_chain();
            test_short_rows();
            test_outer_xrow();
            test_mid_skinny_post();
            test_kmajor_prep();
            test_solo();
            test_lanes_exec();
            test_lanes_fuse();
            eb_team_destroy(tu_team);
            tu_team = NULL;
        }
        /* Split BLAS calls and unsplit small ones run with OpenBLAS at one
         * thread; its count must be back afterwards. */
        EB_CHECK(eb_blas_threads() == blas_threads,
                 "%d threads: OpenBLAS threads %d after the cases, %d before",
                 threads, eb_blas_threads(), blas_threads);
    }
    return eb_check_done("test_engine");
}
