/* options.h - receptiond's settings from the command line and from its
 * configuration file, which take the same names (options.c). */
#ifndef RD_OPTIONS_H
#define RD_OPTIONS_H

/* The file read when neither --config nor --no-config is given (absent
 * is fine then; a --config FILE that cannot be read is an error). */
#define RD_DEFAULT_CONFIG "/etc/libception/receptiond.conf"

/* Fill rd_cfg from the configuration file, then from the flags, which
 * override it.  Returns -1 to go on, or an exit code (0 after --help,
 * --version or a clean --check-config; 2 after a usage or file error,
 * said in one line on stderr). */
int rd_options_parse(int argc, char **argv);

#endif
