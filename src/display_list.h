/* A snippet's display list as its result carries it: one entry per display,
 * an update replacing the entry of its display_id in place (as a notebook
 * shows the latest rendering), bounded in bytes and in entries. */
#ifndef PTYBOX_DISPLAY_LIST_H
#define PTYBOX_DISPLAY_LIST_H

#include <stdbool.h>
#include <stddef.h>

#include <cJSON.h>

/* At the caps a new display is dropped (and `dropped` set: the result says
 * truncated); an update of a display already listed still replaces it. */
#define DISPLAY_LIST_BYTES   ((size_t)64 << 20)
#define DISPLAY_LIST_ENTRIES 1000

struct display_list {
	cJSON *list; /* array of bundles; NULL while empty */
	size_t bytes, entries;
	size_t max_bytes, max_entries;
	bool dropped;
};

void display_list_init(struct display_list *l, size_t max_bytes, size_t max_entries);
void display_list_free(struct display_list *l);

/* Takes `data` (a MIME bundle; freed when not kept). A display_id (or NULL)
 * and the update flag go into the entry as "display_id" and "update" (no
 * MIME type lacks a '/', so they cannot clash). An update whose display is
 * listed replaces that entry where it is; one of a display of an earlier
 * snippet is added, with "update":true, and later updates replace it.
 * Returns 0, or -ENOMEM. */
int display_list_add(struct display_list *l, cJSON *data, const char *display_id, bool update);

#endif
