// SPDX-License-Identifier: GPL-2.0
/*
 * outfile.c: write an output the user named without ever losing what was
 * there: a regular file (or a new one) is written to a temporary file
 * beside it and renamed over it only when complete, so a failed run leaves
 * the path as it was; a character device or a pipe (/dev/null,
 * /dev/stdout) is written in place and never removed. Nothing the tool did
 * not create is ever unlinked.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runfiles.h"
#include "common.h"

/* DIR/.NAME.XXXXXX for DIR/NAME, created with the mode the umask gives. */
int create_temp_beside(const char *path, char **tmp)
{
	const char *slash = strrchr(path, '/');
	size_t dir_len = slash ? (size_t)(slash - path + 1) : 0;
	size_t len = strlen(path) + sizeof("/..XXXXXX");
	mode_t mask = umask(0);
	int fd;

	umask(mask);
	*tmp = xcalloc(len, 1);
	snprintf(*tmp, len, "%.*s.%s.XXXXXX", (int)dir_len, path, path + dir_len);
	fd = mkstemp(*tmp);
	if (fd >= 0 && !fchmod(fd, 0666 & ~mask))
		return fd;
	fprintf(stderr, "%s: %s\n", *tmp, strerror(errno));
	if (fd >= 0) {
		close(fd);
		remove_temp(tmp);
	}
	free(*tmp);
	*tmp = NULL;
	return -1;
}

/* Remove and forget a file create_temp_beside() made; NULL: none. */
void remove_temp(char **tmp)
{
	if (*tmp)
		unlink(*tmp);
	free(*tmp);
	*tmp = NULL;
}

/*
 * Where a regular file's new contents go: through a symbolic link to the
 * file it names, so the link stays a link.
 */
static char *final_path(const char *path)
{
	char *real = realpath(path, NULL);

	return real ? real : strdup(path);
}

int outfile_open(struct outfile *o, const char *path)
{
	struct stat st;
	int fd;

	memset(o, 0, sizeof(*o));
	o->path = path;
	if (!strcmp(path, "-")) {
		o->f = stdout;
		return 0;
	}
	if (!stat(path, &st) && !S_ISREG(st.st_mode)) {
		if (S_ISDIR(st.st_mode)) {
			fprintf(stderr, "kvm-tsc-merge: %s is a directory\n", path);
			return -1;
		}
		o->f = fopen(path, "w");
		if (!o->f)
			fprintf(stderr, "kvm-tsc-merge: cannot write %s: %s\n", path, strerror(errno));
		return o->f ? 0 : -1;
	}
	o->target = final_path(path);
	fd = create_temp_beside(o->target, &o->tmp);
	if (fd < 0)
		return -1;
	o->f = fdopen(fd, "w");
	if (!o->f) {
		fprintf(stderr, "%s: %s\n", o->tmp, strerror(errno));
		close(fd);
		outfile_abort(o);
		return -1;
	}
	return 0;
}

static int write_failed(struct outfile *o)
{
	fprintf(stderr, "kvm-tsc-merge: writing %s failed: %s\n", o->path, strerror(errno));
	outfile_abort(o);
	return -1;
}

/*
 * Whether all that the sinks wrote reached the output: a sink writes and
 * checks nothing, and a failed write is reported here, naming the output.
 */
static int outfile_flush(struct outfile *o)
{
	if (!o->f || (!fflush(o->f) && !ferror(o->f)))
		return 0;
	return write_failed(o);
}

/* Flush and close; a temporary file takes the path's place. */
int outfile_commit(struct outfile *o)
{
	FILE *f = o->f;

	if (outfile_flush(o))
		return -1;
	if (!f)
		return 0;
	o->f = NULL;
	if (f != stdout && fclose(f))
		return write_failed(o);
	if (o->tmp && rename(o->tmp, o->target)) {
		fprintf(stderr, "kvm-tsc-merge: %s: %s\n", o->path, strerror(errno));
		outfile_abort(o);
		return -1;
	}
	free(o->tmp);
	free(o->target);
	o->tmp = o->target = NULL;
	o->kept = true;
	return 0;
}

/* Drop what was written: remove the temporary file, nothing else. */
void outfile_abort(struct outfile *o)
{
	if (o->f && o->f != stdout)
		fclose(o->f);
	o->f = NULL;
	remove_temp(&o->tmp);
	free(o->target);
	o->target = NULL;
}

/*
 * Each output is put in place on its own: one whose write fails (a full
 * disk) is dropped with an error that names it, and the others, complete,
 * are kept.
 */
int outfiles_commit(struct outfile *o, int nr)
{
	int i, ret = 0;

	for (i = 0; i < nr; i++)
		if (outfile_commit(&o[i]))
			ret = -1;
	return ret;
}

void outfiles_abort(struct outfile *o, int nr)
{
	int i;

	for (i = 0; i < nr; i++)
		outfile_abort(&o[i]);
}
