/* heap.c - timer min-heap; see heap.h. */
#include "heap.h"

#include <stdlib.h>

void heap_init(struct heap *h)
{
	*h = (struct heap){ 0 };
}

void heap_free(struct heap *h)
{
	free(h->v);
	*h = (struct heap){ 0 };
}

static void place(struct heap *h, size_t i, struct heap_node *node)
{
	h->v[i] = node;
	node->pos = i;
}

static void sift_up(struct heap *h, size_t i)
{
	struct heap_node *node = h->v[i];
	while (i > 0) {
		size_t parent = (i - 1) / 2;
		if (h->v[parent]->when <= node->when)
			break;
		place(h, i, h->v[parent]);
		i = parent;
	}
	place(h, i, node);
}

static void sift_down(struct heap *h, size_t i)
{
	struct heap_node *node = h->v[i];
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= h->n)
			break;
		if (c + 1 < h->n && h->v[c + 1]->when < h->v[c]->when)
			c++;
		if (node->when <= h->v[c]->when)
			break;
		place(h, i, h->v[c]);
		i = c;
	}
	place(h, i, node);
}

static void remove_at(struct heap *h, size_t i)
{
	struct heap_node *last = h->v[--h->n];
	h->v[i]->pos = HEAP_NONE;
	if (i == h->n)
		return;
	place(h, i, last);
	sift_down(h, i);
	sift_up(h, last->pos);
}

int heap_set(struct heap *h, struct heap_node *node, int64_t when)
{
	if (when == INT64_MAX) {
		if (node->pos != HEAP_NONE)
			remove_at(h, node->pos);
		return 0;
	}
	if (node->pos != HEAP_NONE) {
		int64_t old = node->when;
		node->when = when;
		if (when < old)
			sift_up(h, node->pos);
		else
			sift_down(h, node->pos);
		return 0;
	}
	if (h->n == h->cap) {
		size_t cap = h->cap ? h->cap * 2 : 1024;
		struct heap_node **v = realloc(h->v, cap * sizeof *v);
		if (!v)
			return -1;
		h->v = v, h->cap = cap;
	}
	node->when = when;
	place(h, h->n++, node);
	sift_up(h, node->pos);
	return 0;
}
