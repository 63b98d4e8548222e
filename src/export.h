/*
 * export: --export-csv FILE and --export-markdown FILE (hyperfine's names),
 * reporters beside the table and the JSON lines. Each keeps its rows and
 * writes the whole file at finish, through a temporary file renamed into
 * place, so a failed run never leaves half a file.
 *
 * CSV: a header line, then one row per measurement (RFC 4180 quoting).
 * Markdown: the machine and run on two lines, then one table.
 */
#ifndef EB_EXPORT_H
#define EB_EXPORT_H

#include "report.h"

typedef enum { EB_EXPORT_CSV, EB_EXPORT_MARKDOWN } eb_export_kind;

eb_status eb_report_export(const char *file, eb_export_kind kind,
                           eb_reporter *out, eb_error *err);

#endif
