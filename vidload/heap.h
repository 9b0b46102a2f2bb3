/*
 * heap.h - a binary min-heap of timers keyed by CLOCK_MONOTONIC
 * nanoseconds.  Each element remembers its own position, so a session can
 * move its one timer (re-arm) in O(log n) without a lazy-deletion backlog.
 */
#ifndef VL_HEAP_H
#define VL_HEAP_H

#include <stddef.h>
#include <stdint.h>

#define HEAP_NONE ((size_t)-1)

struct heap_node {
	int64_t when;
	size_t pos;   /* index in the heap, HEAP_NONE when not armed */
};

struct heap {
	struct heap_node **v;
	size_t n, cap;
};

void heap_init(struct heap *h);
void heap_free(struct heap *h);
/* Insert, move or (when == INT64_MAX) remove a node; 0 or -1 (no memory). */
int heap_set(struct heap *h, struct heap_node *node, int64_t when);
static inline struct heap_node *heap_top(const struct heap *h)
{
	return h->n ? h->v[0] : NULL;
}

#endif
