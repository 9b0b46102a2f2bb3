/*
 * hddsim-mkdisk - put a video library into an empty ext4 image without
 * writing its data, and write the extent map hddsim --disk needs.
 *
 *   hddsim-mkdisk IMAGE LIBRARY MAP
 *
 * IMAGE is a fresh (sparse) mkfs.ext4 image; `libception mkdisk` makes it
 * and calls this.  Every video (or chunk file) gets an inode and written
 * extents (EXT2_FALLOCATE_FORCE_INIT: the kernel reads an unwritten extent
 * as zeros without asking the disk), allocated in library order from the
 * end of the previous file, so the platter holds the videos in the order
 * the library lists them, as hddsim's FUSE mode does.  No data block is
 * written: IMAGE keeps only the file system's own metadata and hddsim
 * synthesizes the videos' bytes from MAP (docs/hddsim.md, "Block disk"):
 *
 *   lcdm 1
 *   disk BYTES
 *   extent DISK_OFFSET LENGTH VIDEO_NAME VIDEO_OFFSET
 */
#include "library.h"

#include <ext2fs/ext2fs.h>
#include <et/com_err.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct map_extent {
	uint64_t disk, len, video_off;
	const char *name;
};

static struct map_extent *extents;
static size_t n_extents, cap_extents;

static void die(const char *what, errcode_t err)
{
	fprintf(stderr, "hddsim-mkdisk: %s: %s\n", what, error_message(err));
	exit(1);
}

static void add_extent(uint64_t disk, uint64_t len, const char *name, uint64_t video_off)
{
	struct map_extent *last = n_extents ? &extents[n_extents - 1] : NULL;
	if (last && last->name == name && last->disk + last->len == disk &&
	    last->video_off + last->len == video_off) {
		last->len += len;  /* ext4 caps an extent at 128 MiB; the map need not */
		return;
	}
	if (n_extents == cap_extents) {
		cap_extents = cap_extents ? 2 * cap_extents : 4096;
		extents = realloc(extents, cap_extents * sizeof *extents);
		if (!extents)
			die("extent map", EXT2_ET_NO_MEMORY);
	}
	extents[n_extents++] = (struct map_extent){disk, len, video_off, name};
}

/* Link `ino` into `dir` as `name`, growing the directory when it is full. */
static void link_into(ext2_filsys fs, ext2_ino_t dir, const char *name, ext2_ino_t ino, int type)
{
	errcode_t err = ext2fs_link(fs, dir, name, ino, type);
	if (err == EXT2_ET_DIR_NO_SPACE) {
		if ((err = ext2fs_expand_dir(fs, dir)))
			die(name, err);
		err = ext2fs_link(fs, dir, name, ino, type);
	}
	if (err)
		die(name, err);
}

/* The inode of directory `path` (relative to the root), made with its
 * parents if missing; `path` is modified while walking and restored. */
static ext2_ino_t mkdir_p(ext2_filsys fs, char *path)
{
	ext2_ino_t dir = EXT2_ROOT_INO, ino;
	for (char *p = path, *slash; *p; p = slash + 1) {
		slash = strchr(p, '/');
		if (slash)
			*slash = 0;
		errcode_t err = ext2fs_lookup(fs, dir, p, strlen(p), NULL, &ino);
		if (err == EXT2_ET_FILE_NOT_FOUND) {
			err = ext2fs_mkdir(fs, dir, 0, p);
			if (err == EXT2_ET_DIR_NO_SPACE) {
				if ((err = ext2fs_expand_dir(fs, dir)))
					die(p, err);
				err = ext2fs_mkdir(fs, dir, 0, p);
			}
			if (!err)
				err = ext2fs_lookup(fs, dir, p, strlen(p), NULL, &ino);
		}
		if (err)
			die(p, err);
		dir = ino;
		if (!slash)
			break;
		*slash = '/';
	}
	return dir;
}

/* One regular file of `bytes` bytes holding the video's bytes from
 * `video_off`, its blocks allocated from *goal on; its extents go to the map. */
static void make_file(ext2_filsys fs, ext2_ino_t dir, const char *leaf, uint64_t bytes,
		      const char *video, uint64_t video_off, blk64_t *goal)
{
	struct ext2_inode inode = {0};
	ext2_ino_t ino;
	errcode_t err;

	if ((err = ext2fs_new_inode(fs, dir, LINUX_S_IFREG | 0644, NULL, &ino)))
		die(leaf, err);
	link_into(fs, dir, leaf, ino, EXT2_FT_REG_FILE);
	ext2fs_inode_alloc_stats2(fs, ino, +1, 0);
	inode.i_mode = LINUX_S_IFREG | 0644;
	inode.i_links_count = 1;
	inode.i_atime = inode.i_ctime = inode.i_mtime = fs->now ? fs->now : time(NULL);
	inode.i_flags = EXT4_EXTENTS_FL;
	ext2fs_inode_size_set(fs, &inode, bytes);
	ext2_extent_handle_t h;
	if ((err = ext2fs_write_new_inode(fs, ino, &inode)) ||
	    (err = ext2fs_extent_open2(fs, ino, &inode, &h)))   /* an empty extent tree */
		die(leaf, err);
	ext2fs_extent_free(h);
	if ((err = ext2fs_write_inode(fs, ino, &inode)))
		die(leaf, err);
	blk64_t blocks = (bytes + fs->blocksize - 1) / fs->blocksize;
	if (blocks && (err = ext2fs_fallocate(fs, EXT2_FALLOCATE_FORCE_INIT |
					      EXT2_FALLOCATE_INIT_BEYOND_EOF,
					      ino, NULL, *goal, 0, blocks)))
		die(leaf, err);

	struct ext2fs_extent e;
	if ((err = ext2fs_extent_open(fs, ino, &h)))
		die(leaf, err);
	for (err = ext2fs_extent_get(h, EXT2_EXTENT_ROOT, &e); !err;
	     err = ext2fs_extent_get(h, EXT2_EXTENT_NEXT_LEAF, &e)) {
		if (!(e.e_flags & EXT2_EXTENT_FLAGS_LEAF) || !e.e_len)
			continue;
		if (e.e_flags & EXT2_EXTENT_FLAGS_UNINIT) {
			fprintf(stderr, "hddsim-mkdisk: %s: an unwritten extent\n", video);
			exit(1);
		}
		add_extent(e.e_pblk * fs->blocksize, (uint64_t)e.e_len * fs->blocksize, video,
			   video_off + e.e_lblk * fs->blocksize);
		if (e.e_pblk + e.e_len > *goal)
			*goal = e.e_pblk + e.e_len;
	}
	if (err != EXT2_ET_EXTENT_NO_NEXT && err != EXT2_ET_EXTENT_NO_DOWN)
		die(leaf, err);
	ext2fs_extent_free(h);
}

static int by_disk(const void *a, const void *b)
{
	const struct map_extent *x = a, *y = b;
	return x->disk < y->disk ? -1 : x->disk > y->disk;
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: hddsim-mkdisk IMAGE LIBRARY MAP\n");
		return 2;
	}
	struct library lib;
	char msg[512];
	if (library_load(argv[2], &lib, msg, sizeof msg)) {
		fprintf(stderr, "hddsim-mkdisk: %s\n", msg);
		return 1;
	}
	initialize_ext2_error_table();
	ext2_filsys fs;
	errcode_t err = ext2fs_open(argv[1], EXT2_FLAG_RW | EXT2_FLAG_64BITS, 0, 0,
				    unix_io_manager, &fs);
	if (err)
		die(argv[1], err);
	if ((err = ext2fs_read_bitmaps(fs)))
		die("bitmaps", err);

	blk64_t goal = fs->super->s_first_data_block;
	char path[512], leaf[24];
	for (size_t i = 0; i < lib.count; i++) {
		struct lib_video *v = &lib.videos[i];
		snprintf(path, sizeof path, "%s", v->name);
		if (!v->chunk) {  /* NAME = DIR/LEAF or LEAF */
			char *slash = strrchr(path, '/');
			ext2_ino_t dir = EXT2_ROOT_INO;
			if (slash) {
				*slash = 0;
				dir = mkdir_p(fs, path);
			}
			make_file(fs, dir, slash ? slash + 1 : path, v->bytes, v->name, 0, &goal);
			continue;
		}
		ext2_ino_t dir = mkdir_p(fs, path);  /* NAME/000000, NAME/000001, ... */
		for (uint64_t k = 0, n = lib_video_chunks(v); k < n; k++) {
			uint64_t off = k * v->chunk;
			uint64_t len = v->bytes - off < v->chunk ? v->bytes - off : v->chunk;
			snprintf(leaf, sizeof leaf, "%06llu", (unsigned long long)k);
			make_file(fs, dir, leaf, len, v->name, off, &goal);
		}
	}
	if ((err = ext2fs_close_free(&fs)))
		die("closing the image", err);

	FILE *map = fopen(argv[3], "w");
	if (!map) {
		perror(argv[3]);
		return 1;
	}
	qsort(extents, n_extents, sizeof *extents, by_disk);
	FILE *img = fopen(argv[1], "r");
	long long disk = 0;
	if (img && !fseeko(img, 0, SEEK_END))
		disk = ftello(img);
	fprintf(map, "lcdm 1\ndisk %lld\n", disk);
	for (size_t i = 0; i < n_extents; i++)
		fprintf(map, "extent %llu %llu %s %llu\n", (unsigned long long)extents[i].disk,
			(unsigned long long)extents[i].len, extents[i].name,
			(unsigned long long)extents[i].video_off);
	if (img)
		fclose(img);
	if (fclose(map) || disk <= 0) {
		fprintf(stderr, "hddsim-mkdisk: %s: could not write the map\n", argv[3]);
		return 1;
	}
	fprintf(stderr, "hddsim-mkdisk: %zu videos, %zu extents\n", lib.count, n_extents);
	library_free(&lib);
	return 0;
}
