/* A snippet's display list: updates replace, caps drop (display_list.h). */
#include "display_list.h"

#include <errno.h>
#include <string.h>

#include "protocol.h"

void display_list_init(struct display_list *l, size_t max_bytes, size_t max_entries)
{
	*l = (struct display_list){.max_bytes = max_bytes, .max_entries = max_entries};
}

void display_list_free(struct display_list *l)
{
	cJSON_Delete(l->list);
	l->list = NULL;
	l->bytes = l->entries = 0;
}

static cJSON *display_list_find(const struct display_list *l, const char *display_id)
{
	cJSON *e;
	cJSON_ArrayForEach(e, l->list)
	{
		const char *id = protocol_str(e, "display_id");
		if (id && strcmp(id, display_id) == 0)
			return e;
	}
	return NULL;
}

int display_list_add(struct display_list *l, cJSON *data, const char *display_id, bool update)
{
	cJSON *old = update && display_id ? display_list_find(l, display_id) : NULL;
	if (display_id && !cJSON_AddStringToObject(data, "display_id", display_id))
		goto nomem;
	/* In place of a listed one it is simply the display's latest rendering;
	 * added, it stands for one shown by an earlier snippet. */
	if ((update && !old) ||
	    (old && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(old, "update"))))
		if (!cJSON_AddTrueToObject(data, "update"))
			goto nomem;
	/* What it costs to keep counts every value, not only strings (a list
	 * of numbers costs the most per byte). */
	size_t bytes = protocol_json_cost(data);
	size_t old_bytes = old ? protocol_json_cost(old) : 0;
	bool room = l->bytes - old_bytes + bytes <= l->max_bytes &&
		    (old || l->entries < l->max_entries);
	if (!room) {
		l->dropped = true;
		cJSON_Delete(data);
		return 0;
	}
	if (old) {
		/* The members trade places: the entry stays where it is. */
		cJSON *members = old->child;
		old->child = data->child;
		data->child = members;
		cJSON_Delete(data);
		l->bytes -= old_bytes;
	} else {
		if (!l->list && !(l->list = cJSON_CreateArray()))
			goto nomem;
		if (!cJSON_AddItemToArray(l->list, data))
			goto nomem;
		l->entries++;
	}
	l->bytes += bytes;
	return 0;
nomem:
	cJSON_Delete(data);
	return -ENOMEM;
}
