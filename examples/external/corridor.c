/* corridor: a toy multi-agent simulator speaking mobrl.external's protocol (JSON encoding),
 * to show what a simulator in another language needs: POSIX sockets, the 4-byte length
 * framing, and a handful of JSON messages. No libraries.
 *
 * Two walkers stand in a corridor of cells 0..9 and walk to the goal at cell 9. Each step a
 * walker moves left (action 0), stays (1) or moves right (2); it pays 0.1 per step and gets
 * 1 on reaching the goal, where it is done (terminated). After 30 steps the walkers still on
 * their way are truncated. A walker observes [its cell / 9, steps left / 30] as float32.
 * Start cells (0..4) come from a 64-bit LCG seeded by reset's seed (PettingZoo semantics:
 * only walkers still walking act next, listed in "agents").
 *
 *     cc -O2 -o corridor examples/external/corridor.c
 *     ./corridor 5555         # port 0 (the default): any free port, printed on stdout
 *
 * then, in Python:  env = mobrl.external.connect("127.0.0.1:5555")
 *
 * The JSON reading is deliberately minimal: it finds a key's value in the client's small,
 * fixed messages ({"type":"step","actions":{"walker_0":2,...}}); a real simulator would use a
 * JSON library (or msgpack). It serves one client at a time.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define AGENTS 2
#define GOAL 9
#define MAX_STEPS 30
#define BUF 65536

static const char *NAMES[AGENTS] = {"walker_0", "walker_1"};
static int pos[AGENTS], active[AGENTS], t;
static uint64_t rng = 1;

static int read_all(int fd, void *p, size_t n) {
  for (size_t got = 0; got < n;) {
    ssize_t r = read(fd, (char *)p + got, n - got);
    if (r <= 0) return -1;
    got += (size_t)r;
  }
  return 0;
}

/* one frame: 4-byte big-endian length, then the payload (NUL-terminated here) */
static int recv_frame(int fd, char *buf) {
  uint32_t len;
  if (read_all(fd, &len, 4)) return -1;
  len = ntohl(len);
  if (len >= BUF || read_all(fd, buf, len)) return -1;
  buf[len] = 0;
  return 0;
}

static int send_frame(int fd, const char *payload) {
  size_t n = strlen(payload);
  uint32_t len = htonl((uint32_t)n);
  if (write(fd, &len, 4) != 4) return -1;
  for (size_t sent = 0; sent < n;) {
    ssize_t w = write(fd, payload + sent, n - sent);
    if (w <= 0) return -1;
    sent += (size_t)w;
  }
  return 0;
}

/* the text right after "key": (whitespace skipped), or NULL */
static const char *value_of(const char *json, const char *key) {
  char quoted[64];
  snprintf(quoted, sizeof quoted, "\"%s\"", key);
  const char *at = strstr(json, quoted);
  if (!at) return NULL;
  at += strlen(quoted);
  while (*at == ' ' || *at == ':') at++;
  return at;
}

static int is_type(const char *json, const char *type) {
  const char *v = value_of(json, "type");
  return v && *v == '"' && strncmp(v + 1, type, strlen(type)) == 0 && v[1 + strlen(type)] == '"';
}

static uint64_t next(void) {
  rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
  return rng >> 33;
}

/* "walker_0":[0.111111112,1],... for the walkers in `who` */
static char *observations(char *out, const int *who) {
  out += sprintf(out, "\"observations\":{");
  for (int i = 0, first = 1; i < AGENTS; i++) {
    if (!who[i]) continue;
    float cell = (float)pos[i] / (float)GOAL, left = (float)(MAX_STEPS - t) / (float)MAX_STEPS;
    out += sprintf(out, "%s\"%s\":[%.9g,%.9g]", first ? "" : ",", NAMES[i], cell, left);
    first = 0;
  }
  return out + sprintf(out, "}");
}

static char *agents_list(char *out) {
  out += sprintf(out, "\"agents\":[");
  for (int i = 0, first = 1; i < AGENTS; i++)
    if (active[i]) out += sprintf(out, "%s\"%s\"", first ? "" : ",", NAMES[i]), first = 0;
  return out + sprintf(out, "]");
}

static void hello(const char *msg, char *out) {
  const char *v = value_of(msg, "version");
  if (!v || atoi(v) != 1) {
    sprintf(out, "{\"error\":\"protocol version %.8s is not spoken here; corridor speaks 1\"}",
            v ? v : "?");
    return;
  }
  out += sprintf(out, "{\"version\":1,\"encoding\":\"json\",\"name\":\"corridor\","
                      "\"multi_agent\":true,\"possible_agents\":[\"%s\",\"%s\"],",
                 NAMES[0], NAMES[1]);
  const char *box = "{\"type\":\"Box\",\"low\":0,\"high\":1,\"shape\":[2],\"dtype\":\"float32\"}";
  const char *discrete = "{\"type\":\"Discrete\",\"n\":3}";
  sprintf(out, "\"observation_spaces\":{\"%s\":%s,\"%s\":%s},"
               "\"action_spaces\":{\"%s\":%s,\"%s\":%s},\"render_modes\":[]}",
          NAMES[0], box, NAMES[1], box, NAMES[0], discrete, NAMES[1], discrete);
}

static void reset(const char *msg, char *out) {
  const char *seed = value_of(msg, "seed");
  if (seed && (*seed == '-' || (*seed >= '0' && *seed <= '9')))
    rng = (uint64_t)strtoll(seed, NULL, 10);
  t = 0;
  for (int i = 0; i < AGENTS; i++) pos[i] = (int)(next() % 5), active[i] = 1;
  out += sprintf(out, "{");
  out = observations(out, active);
  out += sprintf(out, ",\"infos\":{\"%s\":{},\"%s\":{}},", NAMES[0], NAMES[1]);
  out = agents_list(out);
  sprintf(out, "}");
}

static void step(const char *msg, char *out) {
  const char *actions = value_of(msg, "actions");
  int acted[AGENTS], move[AGENTS];
  for (int i = 0; i < AGENTS; i++) {
    acted[i] = active[i];
    if (!active[i]) continue;
    const char *a = actions ? value_of(actions, NAMES[i]) : NULL;
    if (!a || *a < '0' || *a > '2') {
      sprintf(out, "{\"error\":\"no valid action (0, 1 or 2) for %s\"}", NAMES[i]);
      return;
    }
    move[i] = *a - '0' - 1;
  }
  t++;
  int term[AGENTS] = {0}, trunc[AGENTS] = {0};
  double reward[AGENTS] = {0};
  for (int i = 0; i < AGENTS; i++) {
    if (!acted[i]) continue;
    pos[i] += move[i];
    if (pos[i] < 0) pos[i] = 0;
    if (pos[i] > GOAL) pos[i] = GOAL;
    reward[i] = -0.1 + (pos[i] == GOAL ? 1.0 : 0.0);
    term[i] = pos[i] == GOAL;
    trunc[i] = !term[i] && t >= MAX_STEPS;
    if (term[i] || trunc[i]) active[i] = 0;
  }
  out += sprintf(out, "{");
  out = observations(out, acted);
  const char *parts[3] = {"rewards", "terminations", "truncations"};
  for (int k = 0; k < 3; k++) {
    out += sprintf(out, ",\"%s\":{", parts[k]);
    for (int i = 0, first = 1; i < AGENTS; i++) {
      if (!acted[i]) continue;
      if (k == 0) out += sprintf(out, "%s\"%s\":%.17g", first ? "" : ",", NAMES[i], reward[i]);
      else out += sprintf(out, "%s\"%s\":%s", first ? "" : ",", NAMES[i],
                          (k == 1 ? term[i] : trunc[i]) ? "true" : "false");
      first = 0;
    }
    out += sprintf(out, "}");
  }
  out += sprintf(out, ",\"infos\":{},");
  out = agents_list(out);
  sprintf(out, "}");
}

int main(int argc, char **argv) {
  int port = argc > 1 ? atoi(argv[1]) : 0, one = 1;
  int server = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  setsockopt(server, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(server, (struct sockaddr *)&addr, sizeof addr) || listen(server, 8)) {
    perror("corridor: cannot listen");
    return 1;
  }
  socklen_t size = sizeof addr;
  getsockname(server, (struct sockaddr *)&addr, &size);
  printf("mobrl.external: serving corridor on 127.0.0.1:%d\n", ntohs(addr.sin_port));
  fflush(stdout);
  static char msg[BUF], reply[BUF];
  for (;;) {
    int fd = accept(server, NULL, NULL);
    if (fd < 0) continue;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    while (recv_frame(fd, msg) == 0) {
      if (is_type(msg, "hello")) hello(msg, reply);
      else if (is_type(msg, "reset")) reset(msg, reply);
      else if (is_type(msg, "step")) step(msg, reply);
      else if (is_type(msg, "render")) strcpy(reply, "{\"frame\":null}");
      else if (is_type(msg, "close")) strcpy(reply, "{}");
      else strcpy(reply, "{\"error\":\"unknown request (hello, reset, step, render, close)\"}");
      if (send_frame(fd, reply) || is_type(msg, "close")) break;
    }
    close(fd);
  }
}
