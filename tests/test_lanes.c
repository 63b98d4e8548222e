/* test_lanes: where a program runs as concurrent lanes (lanes.h), on
 * trees given as consumer arrays: the units are the roots of the cut with
 * the least estimated time, numbered by work (largest first, ties by
 * place); every step below a root gets its unit and every other step 0;
 * the fork is the first step that reads a unit's result; a fused group
 * that would straddle a unit's border (a step whose turn is in another
 * unit) rules that cut out; chains, lopsided trees and units below the
 * lane minimum get none. */
#include <string.h>

#include "check.h"
#include "lanes.h"

enum { N = 16 };

typedef struct {
    const char *name;
    int n;
    int consumer[N];
    int turn[N]; /* all -1: every step its own turn */
    double work[N];
    double share, lane_min;
    int fork;              /* expected */
    signed char lane[N];   /* expected */
} tcase;

static void run(const tcase *c)
{
    int turn[N];
    for (int t = 0; t < c->n; t++)
        turn[t] = c->turn[0] < 0 ? t : c->turn[t];
    signed char lane[N];
    memset(lane, 9, sizeof lane);
    int f = eb_lanes_plan(c->n, c->consumer, turn, c->work, c->share,
                          c->lane_min, lane);
    EB_CHECK(f == c->fork, "%s: fork %d, want %d", c->name, f, c->fork);
    for (int t = 0; t < c->n; t++)
        EB_CHECK(lane[t] == c->lane[t], "%s: step %d lane %d, want %d",
                 c->name, t, lane[t], c->lane[t]);
}

int main(void)
{
    const tcase cases[] = {
        /* ((0 1) 2) and ((3 4) 5) joined at 6: two equal halves. */
        {"balanced", 7, {2, 2, 6, 5, 5, 6, 6}, {-1}, {1, 1, 1, 1, 1, 1, 1},
         0.4, 0, 6, {1, 1, 1, 2, 2, 2, 0}},
        /* The same joined at 7, which 8 joins with step 0 (a product of
         * two inputs): 0 is a unit of its own, claimed last; 5 and 6
         * take one step and an input. */
        {"outside", 9, {8, 3, 3, 7, 5, 6, 7, 8, 8}, {-1},
         {1, 1, 1, 1, 1, 1, 1, 1, 1}, 0.3, 0, 7,
         {3, 1, 1, 1, 2, 2, 2, 0, 0}},
        /* A chain: no step has two producing steps. */
        {"chain", 5, {1, 2, 3, 4, 4}, {-1}, {1, 1, 1, 1, 1}, 0.1, 0, -1,
         {0, 0, 0, 0, 0}},
        /* Lopsided: 1 against 6 of 8 (share 0.125 < 0.4). */
        {"lopsided", 8, {1, 2, 3, 4, 5, 7, 7, 7}, {-1},
         {1, 1, 1, 1, 1, 1, 1, 1}, 0.4, 0, -1, {0, 0, 0, 0, 0, 0, 0, 0}},
        /* The same with share 0.1 (the other steps split at 0.9 of one
         * thread's time): steps 0 and 6 at once, the rest after. */
        {"lopsided low share", 8, {1, 2, 3, 4, 5, 7, 7, 7}, {-1},
         {1, 1, 1, 1, 1, 1, 1, 1}, 0.1, 0, 1, {1, 0, 0, 0, 0, 0, 2, 0}},
        /* Balanced but each lane below the lane minimum. */
        {"lane minimum", 7, {2, 2, 6, 5, 5, 6, 6}, {-1},
         {1, 1, 1, 1, 1, 1, 1}, 0.4, 3.5, -1, {0, 0, 0, 0, 0, 0, 0}},
        /* A group of steps 2 and 6 (2 runs at 6's turn) straddles lane 1
         * and the fork step: no fork at 6. */
        {"group straddles", 7, {2, 2, 6, 5, 5, 6, 6},
         {0, 1, 6, 3, 4, 5, 6}, {1, 1, 1, 1, 1, 1, 1}, 0.4, 0, -1,
         {0, 0, 0, 0, 0, 0, 0}},
        /* A group within lane 1 (0 runs at 2's turn) is fine. */
        {"group inside", 7, {2, 2, 6, 5, 5, 6, 6}, {2, 1, 2, 3, 4, 5, 6},
         {1, 1, 1, 1, 1, 1, 1}, 0.4, 0, 6, {1, 1, 1, 2, 2, 2, 0}},
        /* Nested: 10 joins 4 and 9, each of which joins a pair and a
         * step: the fork is 10, whose smaller side has the most work. */
        {"nested", 11, {2, 2, 4, 4, 10, 7, 7, 9, 9, 10, 10}, {-1},
         {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, 0.4, 0, 10,
         {1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 0}},
        /* Work decides, not step counts: 2 joins two heavy steps, 4 joins
         * 2's four steps and one light one, a unit of its own. */
        {"by work", 5, {2, 2, 4, 4, 4}, {-1}, {10, 10, 1, 1, 1}, 0.4, 0, 2,
         {1, 2, 0, 3, 0}},
        /* The same where each side of any cut holds less than the lane
         * minimum: the largest root (10 or 21) or the rest (11 or 1). */
        {"lane minimum by work", 5, {2, 2, 4, 4, 4}, {-1},
         {10, 10, 1, 1, 1}, 0.4, 12, -1, {0, 0, 0, 0, 0}},
        /* Three chains of three steps (0 1 6, 2 3 7, 4 5 8), 9 joining
         * the first two and 10 the third: three units, no single join
         * of two halves; the first read at 9. */
        {"three units", 11, {1, 6, 3, 7, 5, 8, 9, 9, 10, 10, 10}, {-1},
         {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, 0.4, 0, 9,
         {1, 1, 2, 2, 3, 3, 1, 2, 3, 0, 0}},
        /* The same with a fused group of 8 and 10 (8 runs at 10's turn):
         * the cut at three units straddles; the next best is none. */
        {"three units, group straddles", 11,
         {1, 6, 3, 7, 5, 8, 9, 9, 10, 10, 10},
         {0, 1, 2, 3, 4, 5, 6, 7, 10, 9, 10},
         {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, 0.4, 0, -1,
         {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}},
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++)
        run(&cases[k]);
    return eb_check_done("test_lanes");
}
