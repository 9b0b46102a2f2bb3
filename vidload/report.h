/* report.h - human summary and the versioned JSON result. */
#ifndef VL_REPORT_H
#define VL_REPORT_H

#include "run.h"

#include <stdio.h>

#define VL_JSON_VERSION 1

void report_summary(FILE *f, const struct vl_result *res);
/* The settings object (without braces' surrounding key). */
void report_json_settings(FILE *f, const struct vl_config *cfg);
void report_json_result(FILE *f, const struct vl_result *res);

#endif
