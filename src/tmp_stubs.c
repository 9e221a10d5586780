#include <errno.h>
#include "ptybox.h"
int ptybox_session_cancel(ptybox_session *s, uint64_t id)
{
	return -ENOENT;
}
long long ptybox_session_memory(const ptybox_session *s)
{
	return -ENOTSUP;
}
