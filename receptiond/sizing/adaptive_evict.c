/*
 * adaptive_evict.c - the adaptive policy's eviction rule: when
 * prefetched bytes are evicted before their streams come back for them,
 * cut the size towards eviction time x bitrate.
 */
#include "adaptive.h"

#include <math.h>
#include <stdio.h>

/* Heavy memory pressure (section 4.1): a stream must come back for its
 * data before the kernel evicts it, so when prefetched bytes are evicted
 * unused above the threshold the target jumps down towards eviction time
 * x bitrate.  Returns whether it did.
 * - Each evicted window with its own stream's bitrate: the mean over
 *   them of the bytes the stream could consume before the eviction, not
 *   eviction time x the mean bitrate of all streams.  Where slow streams
 *   lose their windows among fast ones that lose nothing, the mean
 *   stream's bitrate sizes for streams that did not need the cut (test
 *   model: 250K fits, the mean's 1.4M cuts nothing).  On the mixed
 *   library from 1M they differ less: the evicted windows' streams ran
 *   at 133-172 kB/s, the mean stream at 167-183 kB/s in the runs before
 *   (HD streams lose windows too: nginx sends a 2.5M segment in several
 *   calls, so each call's window reaches past its ask); the cuts went
 *   to 640K twice in three starts, where they had stopped at 768K.
 * - The threshold is a share of the bytes read, not of the bytes
 *   prefetched: what such an eviction costs is reading the bytes again,
 *   and that matters as a share of the disk's work.  Where requests ask
 *   for most of what is read (SD segments of 512K, windows of 512K), the
 *   prefetch is a sliver of the reads: measured on the SD library at 828
 *   MiB from 1M, 26 MB of needed evictions were 28-63% of the interval's
 *   prefetch and 1.2% of what was read; the rule cut 512K to 256K six
 *   times while the scores side by side put 512K 20-40% lower, and the
 *   search ended at 0.91x of fixed 512K.
 * - Only evictions a stream came back for (missed inside its window)
 *   count: the windows of viewers who left are evicted too, and cost
 *   nothing.  Measured on the SD library at 414 MiB: at every probe's
 *   start (the last probe's sessions all gone at once) 57-124% of the
 *   interval's prefetch was evicted, and the rule cut 512K to 256K six and
 *   fourteen times, while fixed 512K evicted 2% of what it read.
 * - Nor those of windows prefetched before the last cut: they were of the
 *   larger size, and their streams come back to them for a while after
 *   it.  Measured on the HD library from 8M: the interval after the cut
 *   to 4M counted 36% of its reads as needed evictions (13.5 s after
 *   prefetch, 8M windows among them), and the rule cut again to 3.5M and
 *   then 2M, where fixed 4M evicts 1.7% of its reads at twice the load.
 * - At most to half the size per decision (the next one halves again if
 *   evictions go on).  Measured on the HD library from 8M: 6.6% and 6.8%
 *   evicted under light load made eviction time x bitrate 1.5M and 1M,
 *   while the best fixed size was 4M (itself evicting 22% of its prefetch
 *   at its best rate).
 * - It acts under light load too (the paper turns the whole policy off
 *   there): the light-load rule guards against growing a size the miss
 *   ratio cannot judge, and this rule only shrinks.  Measured on the HD
 *   library from 8M: the search's first probes kept the disk 43% and 57%
 *   busy (38% of the prefetch evicted) while 8 sessions/s failed 27% of
 *   its sessions, and the size stayed at 8M.  But there only heavy
 *   evictions (HEAVY_EVICTIONS x the threshold) count: a disk with time
 *   to spare reads the bytes again at no cost to anyone.  Measured on the
 *   HD library from 8M: in the warm-up (4 sessions/s, busy below 60%)
 *   needed evictions of 6.8%, 5.1% and 5.6% of the reads cut 8M -> 4M ->
 *   2M -> 1.5M, where fixed 4M served most, and the 8/s probe met the
 *   size still climbing back at 1.5M and failed 0.96% of its sessions.
 * - Side by side, a size that evicts but scores better than the next
 *   smaller one is kept, unless evictions are heavy. */
int ad_eviction_cut(struct adaptive *a, const struct sz_figures *f, int light, uint64_t now)
{
	double share = f->needed_read_share - f->older_read_share;
	double threshold = light ? HEAVY_EVICTIONS * a->evict_max : a->evict_max;
	/* What the evicted streams could consume before the eviction, each
	 * at its own bitrate; without any bitrate known, the mean stream's
	 * (a scan of the stream table, so only then). */
	double fits = f->needed_fit > 0 ? f->needed_fit :
	              f->needed_age_s * sz_streams_mean_bitrate(&a->b.streams);
	if (share <= threshold || f->needed_age_s <= 0 || fits <= 0) {
		if (light && share > a->evict_max)
			rd_log("%s: evictions: %.1f%% of the bytes read were prefetched and evicted "
			       "before their streams came back for them, under light load: no cut "
			       "below %.0f%%", a->b.who, share * 100, threshold * 100);
		if (f->older_read_share > a->evict_max)
			rd_log("%s: evictions: %.1f%% of the bytes read were prefetched before the last "
			       "cut and evicted, %.1f%% after it: no cut", a->b.who,
			       f->older_read_share * 100, share * 100);
		return 0;
	}
	uint64_t fit = k_size(a, size_k(a, fits));
	uint64_t half = k_size(a, size_k(a, (double)a->target / 2));
	uint64_t want = fit > half ? fit : half;
	if (want >= a->target)
		return 0;
	if (a->side_by_side && share < HEAVY_EVICTIONS * a->evict_max && ad_smaller_won(a, 0) == 0) {
		/* Side by side the score already carries what evictions
		 * cost (the windows read again).  Measured on the
		 * 20,000-video library: the best fixed size (2M) evicted
		 * 14% of what it prefetched, and the rule cut 1M to 512K
		 * although 512K scored 16% worse in the same interval.  Not
		 * under heavy evictions: the groups share the memory, and a
		 * group's score misses the evictions its windows cause in
		 * the others'.  Measured on the HD library from 8M: 82.9%
		 * evicted, 7.5M scored worse than 8M side by side, and the
		 * size grew to 8.5M while 81% of the sessions failed. */
		rd_log("%s: evictions: %.1f%% of the bytes read were prefetched and evicted before "
		       "their streams came back for them, but the smaller size scored higher side by "
		       "side: no cut", a->b.who, share * 100);
		return 0;
	}
	/* The interval was measured at this size: keep its score, or the
	 * gradient climbs back to it as "unmeasured" after every jump
	 * (measured: 256K -> 512K -> 768K -> evictions -> 256K, over and
	 * over); deflation still retries it.  Not a light interval's score,
	 * which says nothing of the size. */
	char why[448], w[32], older[64] = "", kept[48] = "light load, no score kept";
	if (!light) {
		double score = ad_interval_score(a, f);
		ad_keep_score(a, score);
		snprintf(kept, sizeof kept, "score %.3g kept for this size", score);
	}
	/* share and needed_read_share have the same denominator (read): their
	 * ratio turns the prefetch share of all needed bytes into that of
	 * the ones counted here. */
	if (f->older_read_share > 0)
		snprintf(older, sizeof older, "; %.1f%% more of windows from before the last cut",
		         f->older_read_share * 100);
	snprintf(why, sizeof why, "evictions: %.1f%% of the bytes read were prefetched and evicted "
	         "before their streams came back for them (%.1f%% of the prefetch; %.1f%% evicted "
	         "in all%s) after %.1f s on average, at %.1f kB/s %s: size %s%s (%s)",
	         share * 100, f->needed_fraction * share / f->needed_read_share * 100,
	         f->evict_fraction * 100, older, f->needed_age_s,
	         fits / f->needed_age_s / 1e3,
	         f->needed_fit > 0 ? "(their streams' bitrates)" : "(the mean stream's)",
	         sz_fmt_size(fit, w, sizeof w), fit < want ? ", at most half at a time" : "", kept);
	ad_set_target(a, want, now, why);
	return 1;
}
