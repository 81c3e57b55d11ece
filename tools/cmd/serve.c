/* SPDX-License-Identifier: MIT */
/*
 * gpuspy serve [--listen ADDR] [DIR]: the traced processes running on this
 * node, in Prometheus's text exposition format at /metrics, for a
 * Prometheus server to scrape beside dcgm-exporter. Each scrape follows
 * the processes as gpuspy top does (watch.c) and reads what they wrote
 * since. The HTTP server is libmicrohttpd's (one internal thread, so
 * scrapes never overlap); the exposition is written here.
 *
 * Connections: a local user must not blind the node's metrics by holding
 * connections open with half a request. The thread waits with epoll
 * (select stops at 1,024 descriptors), the open files limit is raised to
 * its hard limit, and past KEEP_CONNS open connections each new one closes
 * another (shutdown(): the server sees it end and cleans it up): of those
 * longest without a request, one holding part of a request, else one that
 * has sent nothing since; never one whose whole request has come (being
 * answered, or still in the socket, not read yet). Closing the longest
 * idle alone closed scrapers: a scraper descheduled between its connect
 * and its send, or whose request waits unread, is idle to the server
 * while hundreds of half requests come after it. An idle connection also
 * ends after 10 s. No limit per address: Prometheus and such a user may
 * share one (this host's), and the limit would lock the scraper out with
 * them.
 *
 * Counters are totals since each trace began (rate() gives the per-second
 * figures); device labels are dcgm-exporter's, gpu (the index) and UUID,
 * so that a query can join the two exporters' series on them.
 */
#include <errno.h>
#include <linux/tcp.h>
#include <netdb.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "util/cli.h"
#include "cmd/cmd.h"
#include "util/paths.h"
#include "util/units.h"
#include "read/watch.h"
#include "util/escape.h"

#define DEFAULT_LISTEN "localhost:9401"
#define KEEP_CONNS 512u /* connections kept open at once; more close others (pick_victim) */
#define SCAN_CONNS 32   /* connections pick_victim looks at, the longest without a request first */

/* The most bytes of a label value, escaped: a whole command line (1024
 * bytes in the header) fits even when every byte needs an escape. */
#define LABEL_MAX 4096

/* One label from a trace, after the comma if not first: every value goes
 * through the label sink (escape.c), so that no name can end its label,
 * add lines or leave the exposition invalid UTF-8 (Prometheus then marks
 * the whole target down). */
static void label(FILE *f, const char *name, const char *v)
{
	gs_prom_label(f, name, v, LABEL_MAX);
}

/* The labels every series of process w has: pid, rank, local_rank, command. */
static void proc_labels(FILE *f, const struct gs_watch *w)
{
	const struct gspy_header *h = w->f.tr.h;
	char n[16];
	snprintf(n, sizeof(n), "%u", h->pid);
	label(f, "pid", n);
	snprintf(n, sizeof(n), "%d", h->rank);
	fputc(',', f);
	label(f, "rank", n);
	snprintf(n, sizeof(n), "%d", h->local_rank);
	fputc(',', f);
	label(f, "local_rank", n);
	fputc(',', f);
	label(f, "command", h->command);
}

enum metric {
	M_INFO, M_RECORDING, M_EVENTS, M_DROPPED, M_STEPS, M_STEP_SECONDS, M_PHASE, M_GPU_BUSY, M_COPY, M_ALLOC,
	M_FAILED, M_MEMORY, M_COUNT
};

static const struct {
	const char *name, *type, *help;
} metrics[M_COUNT] = {
	[M_INFO] = { "gpuspy_process_info", "gauge", "A traced process of this node (1), by its labels." },
	[M_RECORDING] = { "gpuspy_recording", "gauge", "1 while the process records, 0 while paused." },
	[M_EVENTS] = { "gpuspy_events_total", "counter", "Events recorded." },
	[M_DROPPED] = { "gpuspy_dropped_events_total", "counter", "Events dropped: the buffer was full (GPUSPY_BUFFER_MB)." },
	[M_STEPS] = { "gpuspy_steps_total", "counter", "Steps: the PyTorch helper's step numbers, else begins of the top-level phase begun most often." },
	[M_STEP_SECONDS] = { "gpuspy_step_seconds", "gauge", "Mean step time over the last 5 s." },
	[M_PHASE] = { "gpuspy_phase_seconds_total", "counter", "Time in each phase (the innermost open phase; libraries' ranges take none)." },
	[M_GPU_BUSY] = { "gpuspy_gpu_busy_seconds_total", "counter", "Time the device ran this process's GPU work (CUPTI's records: their union); they come in batches, seconds late." },
	[M_COPY] = { "gpuspy_copy_bytes_total", "counter", "Bytes copied between host and device, by direction and host memory." },
	[M_ALLOC] = { "gpuspy_alloc_calls_total", "counter", "Device memory allocation and free calls." },
	[M_FAILED] = { "gpuspy_failed_calls_total", "counter", "CUDA calls that returned an error." },
	[M_MEMORY] = { "gpuspy_device_memory_bytes", "gauge", "Device memory the process allocated and has not freed, as gpuspy saw it." },
};

/* A sample's name and the labels of its process; then the caller's own
 * labels, each after a comma; sample_end closes it with the value. */
static void sample_begin(FILE *f, enum metric m, const struct gs_watch *w)
{
	fprintf(f, "%s{", metrics[m].name);
	proc_labels(f, w);
}

static void sample_end(FILE *f, double v)
{
	fprintf(f, "} %.17g\n", v);
}

static void sample(FILE *f, enum metric m, const struct gs_watch *w, double v)
{
	sample_begin(f, m, w);
	sample_end(f, v);
}

/* A sample with the phase label (and fixed, gpuspy's own labels, if any). */
static void phase_sample(FILE *f, enum metric m, const struct gs_watch *w, const char *phase, const char *fixed,
			 double v)
{
	sample_begin(f, m, w);
	fputc(',', f);
	label(f, "phase", phase);
	if (fixed)
		fprintf(f, ",%s", fixed);
	sample_end(f, v);
}

static void family(FILE *f, enum metric m, const struct gs_watch_set *s, uint64_t now)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", metrics[m].name, metrics[m].help, metrics[m].name, metrics[m].type);
	for (int i = 0; i < s->n; i++) {
		const struct gs_watch *w = s->p[i];
		const struct gs_watch_totals *t = &w->total;
		char x[80];
		switch (m) {
		case M_INFO:
			sample(f, m, w, 1);
			break;
		case M_RECORDING:
			sample(f, m, w, !w->f.tr.h->ctl_paused);
			break;
		case M_EVENTS:
			sample(f, m, w, (double)t->events);
			break;
		case M_DROPPED:
			sample(f, m, w, (double)w->f.dropped);
			break;
		case M_STEPS:
			sample(f, m, w, (double)gs_watch_steps_total(w));
			break;
		case M_STEP_SECONDS: {
			struct gs_watch_view v;
			gs_watch_view(w, now, 5000000000ull, &v);
			if (v.steps)
				sample(f, m, w, (double)v.window_ns / 1e9 / (double)v.steps);
			break;
		}
		case M_PHASE:
			for (int p = 0; p < LIVE_PHASES + 2; p++) {
				if (!t->phase_ns[p])
					continue;
				phase_sample(f, m, w, w->names[p], NULL, (double)t->phase_ns[p] / 1e9);
			}
			break;
		case M_GPU_BUSY:
			for (int d = 0; d < GSPY_DEVICES; d++)
				if (t->gpu_busy_ns[d] || w->dev_gpu_end[d]) {
					sample_begin(f, m, w);
					fprintf(f, ",gpu=\"%d\",", d);
					label(f, "UUID", w->uuid[d]);
					sample_end(f, (double)t->gpu_busy_ns[d] / 1e9);
				}
			break;
		case M_COPY:
		case M_ALLOC:
		case M_FAILED:
			/* By phase: those the process has had ("(no phase)"
			 * always; "(other phases)" once there are too many). */
			for (int p = 0; p < LIVE_PHASES + 2; p++) {
				if ((p >= w->nphases && p <= LIVE_PHASES) || (p == LIVE_PHASES + 1 && !w->phase_used_other))
					continue;
				const char *ph = w->names[p];
				if (m == M_FAILED) {
					phase_sample(f, m, w, ph, NULL, (double)t->failed[p]);
				} else if (m == M_ALLOC) {
					phase_sample(f, m, w, ph, "call=\"alloc\"", (double)t->allocs[p]);
					phase_sample(f, m, w, ph, "call=\"free\"", (double)t->frees[p]);
				} else {
					for (int dir = 0; dir < 2; dir++)
						for (int mem = 0; mem < 2; mem++) {
							snprintf(x, sizeof(x), "direction=\"%s\",memory=\"%s\"",
								 dir ? "d2h" : "h2d", mem ? "pinned" : "pageable");
							phase_sample(f, m, w, ph, x, (double)t->copy_bytes[p][dir][mem]);
						}
				}
			}
			break;
		case M_MEMORY:
			sample(f, m, w, w->reserved > 0 ? (double)w->reserved : 0);
			break;
		default:
			break;
		}
	}
}

/* An open connection, in the list of them by their last request. */
struct conn {
	struct conn *prev, *next;
	int fd, listed;
	int serving;   /* between its request and the end of the answer */
	uint64_t seen; /* bytes it had sent when its last request came */
};

struct server {
	struct gs_watch_set set;
	struct conn *head, *tail; /* head: the longest without a request */
	unsigned nconn, keep;
};

static void conn_unlink(struct server *s, struct conn *c)
{
	*(c->prev ? &c->prev->next : &s->head) = c->next;
	*(c->next ? &c->next->prev : &s->tail) = c->prev;
	c->prev = c->next = NULL;
	c->listed = 0;
	s->nconn--;
}

static void conn_append(struct server *s, struct conn *c)
{
	c->prev = s->tail;
	c->next = NULL;
	*(s->tail ? &s->tail->next : &s->head) = c;
	s->tail = c;
	c->listed = 1;
	s->nconn++;
}

/* The bytes the peer of fd has sent (TCP_INFO, Linux 4.1 on); 0 unknown. */
static uint64_t bytes_in(int fd)
{
	struct tcp_info ti;
	socklen_t len = sizeof(ti);
	memset(&ti, 0, sizeof(ti));
	if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) != 0 ||
	    len < offsetof(struct tcp_info, tcpi_bytes_received) + sizeof(ti.tcpi_bytes_received))
		return 0;
	return ti.tcpi_bytes_received;
}

enum conn_kind {
	C_WHOLE, /* its whole request came: being answered, or in the socket still */
	C_PART,  /* part of a request came since the last (or the peer closed) */
	C_QUIET, /* nothing came since its last request, or since it opened */
};

static enum conn_kind conn_kind(const struct conn *c)
{
	if (c->serving)
		return C_WHOLE;
	/* What the server has not read yet: a request's head ends with a
	 * blank line (CRLF CRLF; a bare LF LF too). A head past this many
	 * bytes is no scraper's. */
	char b[2048];
	ssize_t n = recv(c->fd, b, sizeof(b), MSG_PEEK | MSG_DONTWAIT);
	if (n > 0 && (memmem(b, (size_t)n, "\n\r\n", 3) || memmem(b, (size_t)n, "\n\n", 2)))
		return C_WHOLE;
	if (n == 0)
		return C_PART; /* the peer closed: it goes anyway */
	return bytes_in(c->fd) > c->seen ? C_PART : C_QUIET;
}

/*
 * The connection that a new one, c, closes: of the SCAN_CONNS longest
 * without a request, the first holding part of one (the half requests
 * that fill the server), else the first that has sent nothing since (a
 * client slow to send, or idle between requests); never one whose whole
 * request came. When all of those have (requests piped and never read:
 * the connection blocks on its answers), the longest without a request,
 * so that no client can hold the server full. NULL: only c.
 */
static struct conn *pick_victim(struct server *s, const struct conn *c)
{
	struct conn *quiet = NULL;
	int n = 0;
	for (struct conn *o = s->head; o && o != c && n < SCAN_CONNS; o = o->next, n++) {
		enum conn_kind k = conn_kind(o);
		if (k == C_PART)
			return o;
		if (k == C_QUIET && !quiet)
			quiet = o;
	}
	if (quiet)
		return quiet;
	return n == SCAN_CONNS ? s->head : NULL;
}

/* The server's thread calls this as each connection opens and closes. */
static void on_connection(void *cls, struct MHD_Connection *mc, void **ctx, enum MHD_ConnectionNotificationCode toe)
{
	struct server *s = cls;
	struct conn *c = *ctx;
	if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
		if (c && c->listed)
			conn_unlink(s, c);
		free(c);
		*ctx = NULL;
		return;
	}
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CONNECTION_FD);
	if (!ci || !(c = calloc(1, sizeof(*c))))
		return; /* not listed: it still ends when idle for the timeout */
	c->fd = ci->connect_fd;
	*ctx = c;
	conn_append(s, c);
	struct conn *old;
	while (s->nconn > s->keep && (old = pick_victim(s, c))) {
		conn_unlink(s, old);
		shutdown(old->fd, SHUT_RDWR); /* the server sees it end and closes it */
	}
}

static struct conn *conn_of(struct MHD_Connection *mc)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(mc, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	return ci ? ci->socket_context : NULL;
}

/* A request came: the connection is the most recently used, and is not
 * closed until it is answered. */
static void conn_used(struct server *s, struct MHD_Connection *mc)
{
	struct conn *c = conn_of(mc);
	if (!c)
		return;
	c->serving = 1;
	c->seen = bytes_in(c->fd);
	if (c->listed && c != s->tail) {
		conn_unlink(s, c);
		conn_append(s, c);
	}
}

/* The server's thread calls this as each request ends, answered or not. */
static void on_completed(void *cls, struct MHD_Connection *mc, void **state, enum MHD_RequestTerminationCode toe)
{
	(void)cls, (void)state, (void)toe;
	struct conn *c = conn_of(mc);
	if (c)
		c->serving = 0;
}

/* The open files limit raised to its hard limit (each connection is a
 * descriptor); what it is now. */
static rlim_t raise_nofile(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
		return 1024;
	if (rl.rlim_cur < rl.rlim_max) {
		rlim_t want = rl.rlim_max;
		rl.rlim_cur = want;
		if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
			getrlimit(RLIMIT_NOFILE, &rl);
	}
	return rl.rlim_cur;
}

static enum MHD_Result reply(struct MHD_Connection *c, unsigned code, const char *type, char *body, size_t len)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, "Content-Type", type);
	enum MHD_Result ok = MHD_queue_response(c, code, r);
	MHD_destroy_response(r);
	return ok;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
				  const char *version, const char *data, size_t *data_size, void **state)
{
	struct server *s = cls;
	(void)version, (void)data, (void)data_size, (void)state;
	conn_used(s, c);
	char *body = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&body, &len);
	if (!f)
		return MHD_NO;
	unsigned code = MHD_HTTP_OK;
	const char *type = "text/plain; charset=utf-8";
	if (strcmp(method, "GET") && strcmp(method, "HEAD")) {
		code = MHD_HTTP_METHOD_NOT_ALLOWED;
		fprintf(f, "only GET\n");
	} else if (!strcmp(url, "/metrics")) {
		gs_watch_scan(&s->set);
		gs_watch_poll_all(&s->set);
		uint64_t now = gs_mono_now();
		for (int m = 0; m < M_COUNT; m++)
			family(f, (enum metric)m, &s->set, now);
		type = "text/plain; version=0.0.4; charset=utf-8";
	} else if (!strcmp(url, "/")) {
		fprintf(f, "gpuspy serve: the traced processes of this node at /metrics\n");
	} else {
		code = MHD_HTTP_NOT_FOUND;
		fprintf(f, "not found: try /metrics\n");
	}
	fclose(f);
	return reply(c, code, type, body, len);
}

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

/* SIGINT and SIGTERM blocked before the server's threads start (they
 * inherit the mask) and handled from now on: each is taken by the main
 * thread's sigsuspend, never by a server thread (which would leave main
 * asleep), and one sent as soon as the address is said is not the default
 * action's (serve killed, exit -15). *old: the mask to wait with. */
static void catch_stop(sigset_t *old)
{
	struct sigaction sa = { .sa_handler = on_signal };
	sigset_t block;
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigprocmask(SIG_BLOCK, &block, old);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

/* DIR as serve reads it: one that is not there is an error, not an empty
 * node (NULL, said); one with gpuspy run's directories, its newest run. */
static const char *serve_dir(const char *dir, char *buf, size_t cap)
{
	struct stat st;
	if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
		fprintf(stderr, "gpuspy: error: serve: %s: %s\n", dir,
			stat(dir, &st) != 0 ? strerror(errno) : "not a directory");
		return NULL;
	}
	return gs_paths_live_dir(dir, buf, cap);
}

int gs_cmd_serve(int argc, char **argv)
{
	const char *listen = DEFAULT_LISTEN;
	struct server s;
	memset(&s, 0, sizeof(s));
	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--listen") && i + 1 < argc) {
			listen = argv[++i];
		} else if (argv[i][0] == '-') {
			return gs_bad_option("serve", argv[i], "--listen");
		} else if (s.set.dir) {
			fprintf(stderr, "gpuspy: error: serve: one directory, not '%s' too\n", argv[i]);
			return 2;
		} else {
			s.set.dir = argv[i];
		}
	}
	char run_dir[4096];
	if (s.set.dir && !(s.set.dir = serve_dir(s.set.dir, run_dir, sizeof(run_dir))))
		return 1;
	/* HOST:PORT, [V6]:PORT or :PORT (every address). */
	char host[256];
	const char *colon = strrchr(listen, ':');
	size_t hl = colon ? (size_t)(colon - listen) : 0;
	char *end = NULL;
	long port = colon ? strtol(colon + 1, &end, 10) : -1;
	if (!colon || end == colon + 1 || *end || port < 0 || port > 65535 || hl >= sizeof(host)) {
		fprintf(stderr, "gpuspy: error: serve: --listen %s is not HOST:PORT (e.g. localhost:9401, :9401)\n", listen);
		return 2;
	}
	memcpy(host, listen, hl);
	host[hl] = 0;
	if (hl >= 2 && host[0] == '[' && host[hl - 1] == ']') {
		memmove(host, host + 1, hl - 2);
		host[hl - 2] = 0;
	}
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE }, *ai;
	char ps[8];
	snprintf(ps, sizeof(ps), "%ld", port);
	int rc = getaddrinfo(*host ? host : NULL, ps, &hints, &ai);
	if (rc) {
		fprintf(stderr, "gpuspy: error: serve: --listen %s: %s\n", listen, gai_strerror(rc));
		return 2;
	}
	/* Twice KEEP_CONNS at most: the connections closed for new ones
	 * count until the server has cleaned them up. Well under the
	 * descriptors this process may open (the traces take some). */
	rlim_t nofile = raise_nofile();
	unsigned limit = nofile > 2 * KEEP_CONNS + 256 ? 2 * KEEP_CONNS : nofile > 320 ? (unsigned)nofile - 256 : 64;
	s.keep = limit / 2;
	unsigned flags = MHD_USE_AUTO_INTERNAL_THREAD | (ai->ai_family == AF_INET6 ? MHD_USE_IPv6 : 0);
	sigset_t old;
	catch_stop(&old);
	struct MHD_Daemon *d = MHD_start_daemon(flags, (uint16_t)port, NULL, NULL, on_request, &s, MHD_OPTION_SOCK_ADDR,
						ai->ai_addr, MHD_OPTION_CONNECTION_TIMEOUT, 10u,
						MHD_OPTION_CONNECTION_LIMIT, limit, MHD_OPTION_NOTIFY_CONNECTION,
						on_connection, &s, MHD_OPTION_NOTIFY_COMPLETED, on_completed, &s,
						MHD_OPTION_END);
	freeaddrinfo(ai);
	if (!d) {
		fprintf(stderr, "gpuspy: error: serve: cannot listen on %s: %s\n", listen,
			errno ? strerror(errno) : "refused");
		return 1;
	}
	const union MHD_DaemonInfo *di = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
	printf("gpuspy serve: http://%s:%u/metrics, the traced processes %s%s\n", *host ? host : "*",
	       di ? di->port : (unsigned)port, s.set.dir ? "in " : "of this node", s.set.dir ? s.set.dir : "");
	fflush(stdout);
	while (!stop) /* the signal is taken only inside sigsuspend: none is missed */
		sigsuspend(&old);
	sigprocmask(SIG_SETMASK, &old, NULL);
	MHD_stop_daemon(d); /* closes every connection: the list is empty */
	gs_watch_set_free(&s.set);
	return 0;
}
