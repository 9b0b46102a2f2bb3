/*
 * adaptive_groups.c - the trial groups of compare=side-by-side: which
 * stream reads which size this interval, what each group's windows cost
 * and gave, the intervals pooled for a decision, the settle interval
 * after the compared sizes change, and the groups' share while the size
 * holds.
 */
#include "adaptive.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

const char *const ad_arm_name[NARMS] = { "smaller", "current", "larger" };

/* The size steps the three groups compare this interval, by group (0
 * where a neighbour lies beyond the sizes that may be used). */
void ad_compared_steps(const struct adaptive *a, unsigned kk[NARMS])
{
	unsigned k = size_k(a, (double)a->target);
	kk[ARM_SMALLER] = a->aa ? k : smaller_k(a, k, a->reach);
	kk[ARM_CURRENT] = k;
	kk[ARM_LARGER] = a->aa ? k : larger_k(a, k, a->reach);
}

/* Which group a stream is in this interval: a share trial of the streams
 * tries the smaller size, as many the larger, the rest the current one,
 * drawn afresh every interval (a hash of the stream, its file and where
 * it started, and the interval).
 * - Per stream, not per file (until 2026-11-26): the score's error counts
 *   streams, so the streams must be what is drawn.  Drawn per file, a
 *   file's streams went together, and one popular file with many viewers
 *   finding each other's data resident moved its group's score beyond
 *   that error: in the model of tests/test_sizing.c with 25 of 200
 *   viewers on one video, every group at the same size (compare=aa), the
 *   trial groups' distance from the current group averaged -4.1 and -2.8
 *   standard errors (20-30% in most decisions) with the followers
 *   starting 150-250 MiB back, before credit(), and -1.2 and -0.4 as
 *   the test has it now; drawn per stream, -0.3 or less either way.
 *   Popularity on the HD library is milder (Zipf
 *   0.8 over 1,000 videos: the first draws 6.5% of the sessions), and
 *   an A/A there at 4M, drawn per file, found no gap (0.99x both ways
 *   over three pooled decisions); per stream is the right draw all the
 *   same, and in the flat and two-kinds models it halved the moves that
 *   noise makes.
 * - Afresh every interval: shifting one fixed hash by two shares per
 *   interval kept the smaller group and the larger group apart for good
 *   (every second eighth each), and where some files draw more streams
 *   or cost more to read, one neighbour was measured on the costlier
 *   half every time. */
enum arm ad_arm_of(const struct adaptive *a, dev_t dev, ino_t ino, uint64_t start)
{
	if (!a->trying)
		return ARM_CURRENT;
	uint64_t h = (uint64_t)ino * 0x9e3779b97f4a7c15ull ^ (uint64_t)dev * 0xbf58476d1ce4e5b9ull ^
	             start * 0x94d049bb133111ebull ^ (a->epoch + 1) * 0xd6e8feb86659fd93ull;
	h ^= h >> 31;
	h *= 0x94d049bb133111ebull;
	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ull;
	h ^= h >> 32;
	double u = (double)(h >> 11) / 9007199254740992.0;
	if (u < a->share)
		return ARM_SMALLER;
	if (u < 2 * a->share)
		return ARM_LARGER;
	return ARM_CURRENT;
}

uint64_t ad_arm_size(const struct adaptive *a, enum arm arm)
{
	if (a->aa)
		return a->cur;
	unsigned k = size_k(a, (double)a->cur), n = 0;
	if (arm == ARM_SMALLER)
		n = smaller_k(a, k, a->reach);
	else if (arm == ARM_LARGER)
		n = larger_k(a, k, a->reach);
	return n ? k_size(a, n) : a->cur;
}

/* A stream's windows of one size done with this interval go into that
 * size's error sums as one: the windows of a stream share its bitrate,
 * its file's place on the disk and its viewer's leaving, so they vary
 * together.  Counted one by one they made the error of a trial group
 * (an eighth of the streams) look smaller than it was. */
static void close_stream_sums(struct adaptive *a, struct sz_stream *s)
{
	if (s->pol_cl_group) {
		struct sums *w = &a->group[s->pol_cl_group - 1];
		double d = s->pol_cl_disk, r = s->pol_cl_read, c = s->pol_cl_consumed;
		w->dd += d * d;
		w->rr += r * r;
		w->cc += c * c;
		w->dr += d * r;
		w->dc += d * c;
		w->rc += r * c;
	}
	s->pol_cl_group = 0;
	s->pol_cl_disk = s->pol_cl_read = s->pol_cl_consumed = 0;
}

/* A new accounting interval (scores count only time at a settled size). */
struct sz_counters ad_roll(struct adaptive *a, uint64_t now, uint64_t *len)
{
	for (unsigned i = 0; i < a->b.streams.cap; i++)
		if (a->b.streams.v[i].used)
			close_stream_sums(a, &a->b.streams.v[i]);
	memcpy(a->group_done, a->group, sizeof a->group);
	memset(a->group, 0, sizeof a->group);
	return sz_account_roll(&a->b.acct, now, len);
}

/* The sizes compared side by side change (a move's ramp is over, or the
 * groups look at other neighbours): windows asked for before now no
 * longer count, and the interval from now on only settles, unscored.
 * A window counts in the interval its stream is done with it, so every
 * interval takes in the windows of the one before that outlasted it, and
 * loses its own to the next.  That evens out only when the interval before
 * compared the same sizes on as many files.  Right after a move it had
 * not: the size just left was everyone's until then, and its windows
 * that outlasted the move (the longest-lived: slow streams, viewers who
 * left) came into that size's score as if its trial group's.  Measured
 * over the 26 adaptive runs of 2026-11-25 whose logs were kept
 * (docs/notes/2026-11-25-prefetch-sizing.md, "Two seeds per probe" and after):
 * 58 of 131 moves were undone by the very next decision.  After the
 * settle interval, what an interval takes in was asked for under the
 * sizes it compares. */
void ad_settle(struct adaptive *a, uint64_t now, const char *why)
{
	if (!a->side_by_side)
		return;
	a->settled_ns = now;
	a->settling = 1;
	a->npooled = 0;
	a->settle_why = why;
}

/* A stream's last window is done with: count it for its size. */
void ad_close_window(struct adaptive *a, struct sz_stream *s)
{
	if (s->pol_group && s->pol_open_ns >= a->settled_ns) {
		struct sums *w = &a->group[s->pol_group - 1];
		w->windows++;
		w->read += s->pol_read;
		w->disk_ns += s->pol_disk_ns;
		w->consumed += s->pol_consumed;
		if (s->pol_cl_group != s->pol_group) {
			close_stream_sums(a, s);
			s->pol_cl_group = s->pol_group;
			w->streams++;
		}
		s->pol_cl_disk += (double)s->pol_disk_ns / 1e6;
		s->pol_cl_read += (double)s->pol_read / SZ_MIB;
		s->pol_cl_consumed += (double)s->pol_consumed / SZ_MIB;
	}
	s->pol_group = 0;
	s->pol_lo = s->pol_hi = 0;
	s->pol_read = s->pol_disk_ns = s->pol_consumed = 0;
}

/* A stream ended: its last window counts too (its unconsumed part is the
 * cost of a size too large for sessions that stop early). */
void ad_stream_ended(void *ctx, struct sz_stream *s, uint64_t now)
{
	struct adaptive *a = ctx;
	sz_account_stream_ended(&a->b.acct, s, now);
	ad_close_window(a, s);
	close_stream_sums(a, s);
}

/* Side by side, the scores of a decision pool the intervals since the
 * compared sizes last changed (ad_settle()), at most MAX_POOLED: each interval
 * measures the same sizes under the same load in every group, so its
 * windows add to the evidence instead of being thrown away at every
 * decision.  A trial group's error (about 9% over one 20 s interval on
 * the mixed library) hid differences of 5-10% between neighbours: from
 * 1M the size stopped at 640K and 768K with 512K scoring lower in several
 * decisions, never by its noise.  Pooling across a move, as tried
 * before, kept the windows that decided the move in the new size's score
 * (a winner's curse); starting afresh at every change does not.  In the
 * model of tests/test_sizing.c with a shallow gradient (switch 2 ms,
 * best 4M, from 2M) the mean size over the second half went from 3.42
 * to 3.76 MiB (four seeds), and the flat model moved 5 times instead of
 * 10. */
static void sums_add(struct sums *to, const struct sums *w)
{
	to->windows += w->windows;
	to->read += w->read;
	to->disk_ns += w->disk_ns;
	to->consumed += w->consumed;
	to->streams += w->streams;
	to->dd += w->dd;
	to->rr += w->rr;
	to->cc += w->cc;
	to->dr += w->dr;
	to->dc += w->dc;
	to->rc += w->rc;
}

void ad_pool_interval(struct adaptive *a, uint64_t len_ns)
{
	if (a->npooled >= MAX_POOLED)
		a->npooled = 0;
	if (a->npooled == 0) {
		memset(a->pooled, 0, sizeof a->pooled);
		a->pooled_ns = 0;
	}
	for (int i = 0; i < NARMS; i++)
		sums_add(&a->pooled[i], &a->group_done[i]);
	a->npooled++;
	a->pooled_ns += len_ns;
}

/* A decision kept the size: the trial groups shrink, halving per decision
 * down to held=, and grow back to trial= at the next change of size.
 * While the size is right, every file in a group is served a worse size:
 * measured on the SD library at 828 MiB, at 512K (the best fixed size)
 * the larger group (768K) scored 15-25% above the current size and the
 * looks two steps away (1M) 10-40%, so an eighth of the files each way
 * cost some 2-4% of the disk's time, while the search steps are 5%.  The
 * groups go on at the smaller share (pooled over up to MAX_POOLED
 * intervals) and still catch a change of the load, more slowly.  Only
 * while every group compared (kk) had four times MIN_STREAMS streams in
 * the interval, so that halved it still has twice as many: with few
 * streams (the models of tests/test_sizing.c have 45-64) the groups stay
 * whole, or no group could be scored at all. */
void ad_hold(struct adaptive *a, const unsigned kk[NARMS], char *txt, size_t len)
{
	txt[0] = 0;
	for (int i = 0; i < NARMS; i++)
		if (kk[i] && a->group_done[i].streams < 4 * MIN_STREAMS)
			return;
	double half = a->share / 2;
	double share = half > a->held ? half : a->held;
	if (share != a->share)
		snprintf(txt, len, "; groups now %.3g%% of streams each way", share * 100);
	a->share = share;
}
