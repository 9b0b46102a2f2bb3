/* fs.c - FUSE operations of hddsim; see fs.h. */
#include "fs.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "content.h"

/* Nothing ever changes: let the kernel cache names and attributes. */
#define FOREVER 1e6
/* 2012-06-01, the chunking paper's year: a fixed mtime keeps runs identical. */
#define MTIME 1338508800

static struct hddsim *ctx(fuse_req_t req) { return fuse_req_userdata(req); }

static struct node *node_of(struct hddsim *h, fuse_ino_t ino)
{
	if (ino < 1 || ino > h->layout.count)
		return NULL;
	return &h->layout.nodes[ino - 1];
}

static void fill_attr(struct hddsim *h, fuse_ino_t ino, struct stat *st)
{
	const struct node *n = node_of(h, ino);
	memset(st, 0, sizeof *st);
	st->st_ino = ino;
	st->st_mode = n->type == NODE_DIR ? S_IFDIR | 0555 : S_IFREG | 0444;
	st->st_nlink = n->type == NODE_DIR ? 2 : 1;
	st->st_size = (off_t)n->size;
	st->st_blocks = (blkcnt_t)((n->size + 511) / 512);
	st->st_blksize = 4096;
	st->st_mtime = st->st_ctime = st->st_atime = MTIME;
}

static int is_file(const struct node *n) { return n->type == NODE_VIDEO || n->type == NODE_REAL; }

/* A file system reads a file's metadata (inode, block map) the first time
 * it is looked up; each file has its own block in a table at the start of
 * its group (layout_assign_metadata).  Later lookups find it cached. */
static void charge_metadata(struct hddsim *h, struct node *n, int pid)
{
	if (!h->meta_group || !is_file(n) || __atomic_exchange_n(&n->meta_done, 1, __ATOMIC_RELAXED))
		return;
	sched_read(&h->sched, n->meta_pos, 4096, 1, pid);
}

static void op_init(void *data, struct fuse_conn_info *conn)
{
	struct hddsim *h = data;
	if (conn->capable & FUSE_CAP_ASYNC_READ)
		conn->want |= FUSE_CAP_ASYNC_READ;
	if (conn->capable & FUSE_CAP_SPLICE_WRITE)
		conn->want |= FUSE_CAP_SPLICE_WRITE | FUSE_CAP_SPLICE_MOVE;
	conn->max_read = h->max_read;
	conn->max_background = h->max_background;
	conn->congestion_threshold = h->congestion_threshold;
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct hddsim *h = ctx(req);
	struct node *p = node_of(h, parent);
	if (!p || p->type != NODE_DIR) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	long idx = layout_lookup(&h->layout, (uint32_t)(parent - 1), name);
	if (idx < 0) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	int cancel;
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
	charge_metadata(h, &h->layout.nodes[idx], (int)fuse_req_ctx(req)->pid);
	struct fuse_entry_param e = { .ino = (fuse_ino_t)idx + 1, .generation = 1,
				      .attr_timeout = FOREVER, .entry_timeout = FOREVER };
	fill_attr(h, e.ino, &e.attr);
	if (h->layout.nodes[idx].type == NODE_STATS)
		e.attr_timeout = e.entry_timeout = 0;
	fuse_reply_entry(req, &e);
	pthread_setcancelstate(cancel, NULL);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)fi;
	struct hddsim *h = ctx(req);
	struct stat st;
	if (!node_of(h, ino)) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	fill_attr(h, ino, &st);
	fuse_reply_attr(req, &st, node_of(h, ino)->type == NODE_STATS ? 0 : FOREVER);
}

/* The stats file's text is taken at open, so every read of one open file
 * sees the same snapshot. */
struct stats_snapshot {
	size_t len;
	char text[4096];
};

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct hddsim *h = ctx(req);
	struct node *n = node_of(h, ino);
	if (!n) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	if (n->type == NODE_DIR) {
		fuse_reply_err(req, EISDIR);
		return;
	}
	if ((fi->flags & O_ACCMODE) != O_RDONLY) {
		fuse_reply_err(req, EROFS);
		return;
	}
	fi->fh = 0;
	if (n->type == NODE_STATS) {
		struct stats_snapshot *s = malloc(sizeof *s);
		if (!s) {
			fuse_reply_err(req, ENOMEM);
			return;
		}
		s->len = sched_stats(&h->sched, s->text, sizeof s->text);
		fi->fh = (uint64_t)(uintptr_t)s;
		fi->direct_io = 1;
	} else {
		/* Page cache survives open(), as on a local disk file system. */
		fi->keep_cache = 1;
		if (n->type == NODE_REAL) {
			int fd = open(n->real, O_RDONLY | O_CLOEXEC);
			if (fd < 0) {
				fuse_reply_err(req, errno);
				return;
			}
			fi->fh = (uint64_t)fd;
		}
	}
	if (fuse_reply_open(req, fi) == -ENOENT) {
		if (n->type == NODE_REAL)
			close((int)fi->fh);
		else if (n->type == NODE_STATS)
			free((void *)(uintptr_t)fi->fh);
	}
}

static void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct node *n = node_of(ctx(req), ino);
	if (n && n->type == NODE_REAL)
		close((int)fi->fh);
	else if (n && n->type == NODE_STATS)
		free((void *)(uintptr_t)fi->fh);
	fuse_reply_err(req, 0);
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	struct hddsim *h = ctx(req);
	struct node *n = node_of(h, ino);
	if (!n || n->type == NODE_DIR) {
		fuse_reply_err(req, n ? EISDIR : ENOENT);
		return;
	}
	if (n->type == NODE_STATS) {
		const struct stats_snapshot *s = (void *)(uintptr_t)fi->fh;
		size_t o = (size_t)off < s->len ? (size_t)off : s->len;
		fuse_reply_buf(req, s->text + o, size < s->len - o ? size : s->len - o);
		return;
	}
	if ((uint64_t)off >= n->size) {
		fuse_reply_buf(req, NULL, 0);
		return;
	}
	size_t len = n->size - (uint64_t)off < size ? (size_t)(n->size - (uint64_t)off) : size;
	char *buf = malloc(len);
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	/* Queue the command first (its arrival is now), produce the bytes
	 * while it waits, then wait out the modelled drive.  libfuse cancels
	 * workers at exit, which must not happen mid-request. */
	int err = 0, cancel;
	struct sched_req rq;
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
	sched_submit(&h->sched, &rq, n->pos + (uint64_t)off, len, 0, (int)fuse_req_ctx(req)->pid);
	if (n->type == NODE_VIDEO) {
		content_fill(n->seed, n->src_off + (uint64_t)off, buf, len);
	} else if (n->type == NODE_DISK) {
		err = -disk_read(&h->disk, (uint64_t)off, buf, len);
	} else {
		ssize_t got = pread((int)fi->fh, buf, len, off);
		if (got < 0)
			err = errno;
		else if ((size_t)got < len)
			memset(buf + got, 0, len - (size_t)got); /* file shrank under us */
	}
	sched_wait(&h->sched, &rq);
	if (err)
		fuse_reply_err(req, err);
	else
		fuse_reply_buf(req, buf, len);
	free(buf);
	pthread_setcancelstate(cancel, NULL);
}

static void op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct node *n = node_of(ctx(req), ino);
	if (!n)
		fuse_reply_err(req, ENOENT);
	else if (n->type != NODE_DIR)
		fuse_reply_err(req, ENOTDIR);
	else {
		fi->cache_readdir = 1;
		fi->keep_cache = 1;
		fuse_reply_open(req, fi);
	}
}

/* Entries: 0 ".", 1 "..", then the children in layout order; the hidden
 * /.hddsim directory is not listed (a diff of two mounts must not see it). */
static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	(void)fi;
	struct hddsim *h = ctx(req);
	struct node *d = node_of(h, ino);
	if (!d || d->type != NODE_DIR) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	char *buf = malloc(size);
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	size_t used = 0;
	for (off_t i = off; i < (off_t)d->nkids + 2; i++) {
		struct stat st = {0};
		const char *name;
		if (i == 0) {
			name = ".", st.st_ino = ino, st.st_mode = S_IFDIR;
		} else if (i == 1) {
			name = "..", st.st_ino = d->parent + 1, st.st_mode = S_IFDIR;
		} else {
			uint32_t k = d->kids[i - 2];
			const struct node *c = &h->layout.nodes[k];
			if (ino == FUSE_ROOT_ID && !strcmp(c->name, ".hddsim"))
				continue;
			name = c->name;
			st.st_ino = k + 1;
			st.st_mode = c->type == NODE_DIR ? S_IFDIR : S_IFREG;
		}
		size_t need = fuse_add_direntry(req, buf + used, size - used, name, &st, i + 1);
		if (need > size - used)
			break;
		used += need;
	}
	fuse_reply_buf(req, buf, used);
	free(buf);
}

static void op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	(void)ino;
	struct hddsim *h = ctx(req);
	struct statvfs sv = {
		.f_bsize = 4096, .f_frsize = 4096,
		.f_blocks = h->sched.m.d.capacity / 4096,
		.f_bfree = 0, .f_bavail = 0,
		.f_files = h->layout.count, .f_ffree = 0, .f_namemax = 255,
	};
	fuse_reply_statfs(req, &sv);
}

const struct fuse_lowlevel_ops hddsim_ops = {
	.init    = op_init,
	.lookup  = op_lookup,
	.getattr = op_getattr,
	.open    = op_open,
	.read    = op_read,
	.release = op_release,
	.opendir = op_opendir,
	.readdir = op_readdir,
	.statfs  = op_statfs,
};
