// SPDX-License-Identifier: GPL-2.0
/*
 * pathcheck.c: refuse a run in which an output names one of its inputs or
 * another of its outputs, before anything is opened: an output takes the
 * place of the file at its path when the run succeeds (outfile.c, sync.c),
 * so an input would be lost, and of two outputs only the last one
 * committed would be left.
 *
 * Files are compared by what they are, device and inode, so that a
 * symbolic or hard link, "./x" or "../d/x" cannot hide a clash. An output
 * that does not exist yet is no input; two of them clash when they would
 * be created at one path: their directory resolved, and their last name.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "runfiles.h"
#include "common.h"

struct file_key {
	bool exists;
	bool shared;			/* may take several outputs */
	dev_t dev;
	ino_t ino;
	char *name;			/* !exists: where it would be created */
};

/* @path with each run of slashes made one: a directory not made yet. */
static char *squeeze_slashes(const char *path)
{
	char *s = xcalloc(strlen(path) + 1, 1), *to = s;
	const char *from;

	for (from = path; *from; from++)
		if (*from != '/' || to == s || to[-1] != '/')
			*to++ = *from;
	*to = '\0';
	return s;
}

/* The path a file not there yet would be created at. */
static char *creation_path(const char *path)
{
	const char *slash = strrchr(path, '/');
	const char *base = slash ? slash + 1 : path;
	char *dir = slash ? strndup(path, slash - path + 1) : strdup(".");
	char *real = realpath(dir, NULL), *name;
	size_t len;

	free(dir);
	if (!real)
		return squeeze_slashes(path);
	len = strlen(real) + strlen(base) + 2;
	name = xcalloc(len, 1);
	snprintf(name, len, "%s/%s", real, base);
	free(real);
	return name;
}

/*
 * /dev/null may take several outputs: it keeps nothing to destroy or
 * interleave, and no input is one (input.c reads regular files only).
 * Anything else that exists is one file, whatever names it: "-" is
 * standard output itself, so that /dev/stdout, /dev/fd/1 or
 * /proc/self/fd/1 beside it is the same pipe or terminal, and two
 * outputs there would interleave mid-line.
 */
static bool discards_output(const struct stat *st)
{
	return S_ISCHR(st->st_mode) && st->st_rdev == makedev(1, 3);
}

static void read_key(const char *path, struct file_key *k)
{
	struct stat st;
	int ret;

	memset(k, 0, sizeof(*k));
	ret = strcmp(path, "-") ? stat(path, &st) : fstat(STDOUT_FILENO, &st);
	if (ret) {
		k->name = strcmp(path, "-") ? creation_path(path) : strdup(path);
		return;
	}
	k->exists = true;
	k->shared = discards_output(&st);
	k->dev = st.st_dev;
	k->ino = st.st_ino;
}

static bool same_file(const struct file_key *a, const struct file_key *b)
{
	if (a->shared || b->shared || a->exists != b->exists)
		return false;
	if (a->exists)
		return a->dev == b->dev && a->ino == b->ino;
	return !strcmp(a->name, b->name);
}

/* Each output against every file before it: the inputs come first. */
int check_run_files(const struct run_file *files, int nr)
{
	struct file_key *keys = xcalloc(nr, sizeof(*keys));
	int i, j, ret = 0;

	for (i = 0; i < nr; i++)
		read_key(files[i].path, &keys[i]);
	for (i = 0; i < nr && !ret; i++) {
		for (j = 0; files[i].output && j < i; j++) {
			if (!same_file(&keys[i], &keys[j]))
				continue;
			fprintf(stderr, "kvm-tsc-merge: %s names %s, which is %s (%s): refused, nothing written\n",
				files[i].opt, files[i].path, files[j].what, files[j].opt);
			ret = -1;
			break;
		}
	}
	for (i = 0; i < nr; i++)
		free(keys[i].name);
	free(keys);
	return ret;
}
