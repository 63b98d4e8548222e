/*
 * load: reading instance JSON and stored path files (DESIGN 3.1-3.3).
 * The only module that includes cJSON for reading.
 *
 * Every file is untrusted: each failure is one message naming the file and
 * the field. On success the caller owns the returned object.
 */
#ifndef EB_LOAD_H
#define EB_LOAD_H

#include "instance.h"

typedef enum {
    EB_FILE_INSTANCE,   /* a JSON object with "format_string" */
    EB_FILE_PATHS,      /* a JSON object with "instance" and "paths" */
    EB_FILE_OTHER,      /* JSON, but neither */
    EB_FILE_BAD         /* unreadable or not JSON */
} eb_file_kind;

/* What a *.json file in an instance folder is, without validating it. */
eb_file_kind eb_load_file_kind(const char *file);

/* Load and validate an instance (with its inline paths, if any). */
eb_status eb_load_instance(const char *file, eb_instance **out, eb_error *err);

/* Load and validate a path file for `inst`. */
eb_status eb_load_pathfile(const char *file, const eb_instance *inst,
                           eb_pathset **out, eb_error *err);

/*
 * Path lookup for an instance: `explicit_paths` (a file or a folder holding
 * <name>.json; NULL for none) first, then paths/<name>.json beside the
 * instance's folder, then the inline paths. *out is owned by the caller
 * (a copy even when it is the inline set).
 */
eb_status eb_load_find_paths(const eb_instance *inst,
                             const char *explicit_paths, eb_pathset **out,
                             eb_error *err);

/* Read a whole file into a NUL-terminated buffer (caller frees). */
eb_status eb_load_read_file(const char *file, char **text, size_t *len,
                            eb_error *err);

#endif
