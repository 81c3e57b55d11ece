/* SPDX-License-Identifier: MIT */
/*
 * The gpuspy commands, one file each in tools/cmd/: each takes the
 * arguments after its name and returns the exit status (0 done, 1 failed,
 * 2 misuse). tools/gpuspy.c's table maps names to them.
 */
#ifndef GPUSPY_CMD_H
#define GPUSPY_CMD_H

int gs_cmd_report(int argc, char **argv);
int gs_cmd_dump(int argc, char **argv);
int gs_cmd_export(int argc, char **argv);
/* Returns CMD's exit status; report(n, paths) prints the report. */
int gs_cmd_run(int argc, char **argv, int (*report)(int, char **));
/* The library run preloads: GPUSPY_LIB, else the one installed beside
 * the command (../lib, as the .deb and the wheel put it), else the install
 * prefix's; into out, 0, or -1 when it is not there (run.c). */
int gs_run_find_lib(char *out, size_t cap);
int gs_cmd_diff(int argc, char **argv);
int gs_cmd_env(int argc, char **argv);
int gs_cmd_top(int argc, char **argv);
int gs_cmd_serve(int argc, char **argv);
/* CMD is "start", "stop" or "record". */
int gs_cmd_control(const char *cmd, int argc, char **argv);

/* CMD's usage, what it does and its options, each described (help.c):
 * 0, or -1 for a command that is not one. */
#include <stdio.h>
int gs_help(FILE *f, const char *cmd);
/* The man page (docs/gpuspy.1) and bash or zsh completion, from the same
 * table (help.c). */
int gs_help_man(FILE *f, const char *version);
/* 1 when CMD's option OPT (as written, without =VALUE) takes a value. */
int gs_help_takes_value(const char *cmd, const char *opt);
int gs_help_completion(FILE *f, int zsh);

#endif
