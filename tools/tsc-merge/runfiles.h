/* SPDX-License-Identifier: GPL-2.0 */
/*
 * runfiles.h: the files a run names: checked before it starts (pathcheck.c),
 * and outputs written beside their target and renamed over it only when
 * complete, so a failed run leaves no half file (outfile.c).
 */
#ifndef TSC_MERGE_RUNFILES_H
#define TSC_MERGE_RUNFILES_H

#include <stdbool.h>
#include <stdio.h>

/* outfile.c */
struct outfile {
	const char *path;		/* as the user named it; "-": stdout */
	char *target;			/* the regular file it names */
	char *tmp;			/* written until complete */
	FILE *f;
	bool kept;			/* committed complete */
};

int create_temp_beside(const char *path, char **tmp);
void remove_temp(char **tmp);
int outfile_open(struct outfile *o, const char *path);
int outfile_commit(struct outfile *o);
void outfile_abort(struct outfile *o);
int outfiles_commit(struct outfile *o, int nr);
void outfiles_abort(struct outfile *o, int nr);

/* pathcheck.c: a file the run reads or writes, as the user named it */
struct run_file {
	const char *path;
	const char *opt;		/* the option that names it: "-H", "-o" */
	const char *what;		/* for messages: "the host trace" */
	bool output;
};

int check_run_files(const struct run_file *files, int nr);

#endif
