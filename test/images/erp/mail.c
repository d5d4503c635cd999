/*
 * The stand-in's outgoing mail (odoo.c routes GET|POST /berth/mail here): one message sent
 * the way Odoo sends it, so tests see what a real ERP's mail does with odoo.conf's settings.
 *
 * Where to (odoo/addons/base/models/ir_mail_server.py, IrMailServer.connect / _connect__ in
 * 17.0+): through the active ir.mail_server record _find_mail_server picks (odoo.c
 * mail_server_record: any active record wins, even the dummy "invalid" one `odoo neutralize`
 * adds); with none active, `smtp_server = host or tools.config.get('smtp_server')`, and the
 * config's smtp_port, smtp_user, smtp_password and smtp_ssl (odoo/tools/config.py defaults:
 * localhost, 25, none, none, False).
 *
 * How (Python's smtplib as Odoo drives it): connect, EHLO, then SMTP.login when smtp_user
 * is set (ehlo_or_helo_if_needed; the first of CRAM-MD5, PLAIN, LOGIN the server offers; the
 * stand-in knows PLAIN and LOGIN), send_message: MAIL FROM with SIZE= when the server has the
 * SIZE extension, RCPT TO per recipient, DATA, then QUIT. A reply Odoo's smtplib would raise
 * on (SMTPAuthenticationError, SMTPSenderRefused, SMTPDataError...) ends the attempt: the
 * route answers 500 with the server's reply, as MailDeliveryException carries it.
 *
 * The message (IrMailServer.build_email with body_alternative and attachments): From, To,
 * Subject, Date, Message-Id, MIME-Version; multipart/mixed of a multipart/alternative (the
 * text part, then the HTML) and each attachment in base64 with its file name and type.
 *
 * Query: to (default customer@example.com), subject, from, attach (a file name; repeated up
 * to 4 times), attach_size (bytes of each attachment, default 2048), and user / password,
 * which replace odoo.conf's smtp_user / smtp_password as send_email's arguments of the same
 * names would (tests use them to try another environment's login).
 */
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
#include <openssl/evp.h>

struct mbuf {
  char *data;
  size_t len, cap;
};

static void mb_add(struct mbuf *b, const char *s, size_t n) {
  if (b->len + n + 1 > b->cap) {
    b->cap = (b->len + n + 1) * 2;
    b->data = realloc(b->data, b->cap);
    if (!b->data) abort();
  }
  memcpy(b->data + b->len, s, n);
  b->len += n;
  b->data[b->len] = 0;
}
static void mb_str(struct mbuf *b, const char *s) { mb_add(b, s, strlen(s)); }

static void query_value(const char *q, const char *name, int nth, char *out, size_t size) {
  size_t nl = strlen(name);
  out[0] = 0;
  for (const char *p = q; p && *p;) {
    const char *amp = strchr(p, '&');
    size_t len = amp ? (size_t)(amp - p) : strlen(p);
    if (len > nl && strncmp(p, name, nl) == 0 && p[nl] == '=' && nth-- == 0) {
      size_t o = 0;
      for (size_t i = nl + 1; i < len && o + 1 < size; i++) {
        char c = p[i];
        if (c == '+') c = ' ';
        else if (c == '%' && i + 2 < len) {
          char hex[3] = {p[i + 1], p[i + 2], 0};
          c = (char)strtol(hex, NULL, 16);
          i += 2;
        }
        out[o++] = c;
      }
      out[o] = 0;
      return;
    }
    p = amp ? amp + 1 : NULL;
  }
}

static void b64(const unsigned char *in, size_t n, struct mbuf *out, int wrap) {
  for (size_t i = 0; i < n; i += 57) {
    unsigned char chunk[80];
    size_t take = n - i < 57 ? n - i : 57;
    int len = EVP_EncodeBlock(chunk, in + i, (int)take);
    mb_add(out, (char *)chunk, (size_t)len);
    if (wrap) mb_str(out, "\r\n");
  }
}

/* The attachment's type as its ir.attachment has it (guessed from the name, as Python's
 * mimetypes does), which build_email puts in the part's Content-Type. */
static const char *mimetype(const char *name) {
  const char *dot = strrchr(name, '.');
  if (!dot) return "application/octet-stream";
  if (strcasecmp(dot, ".pdf") == 0) return "application/pdf";
  if (strcasecmp(dot, ".txt") == 0) return "text/plain";
  if (strcasecmp(dot, ".png") == 0) return "image/png";
  if (strcasecmp(dot, ".xml") == 0) return "application/xml";
  return "application/octet-stream";
}

/* One SMTP reply (all its lines); returns its code, the last line in `line`. */
static int reply(FILE *in, char *line, size_t size, struct mbuf *all) {
  for (;;) {
    if (!fgets(line, (int)size, in)) return -1;
    if (all) mb_str(all, line);
    if (strlen(line) < 4 || line[3] != '-') break;
  }
  line[strcspn(line, "\r\n")] = 0;
  return atoi(line);
}

static int command(int fd, FILE *in, const char *text, char *line, size_t size) {
  if (write(fd, text, strlen(text)) < 0) return -1;
  return reply(in, line, size, NULL);
}

static void json_escaped(char *out, size_t size, const char *prefix, const char *s) {
  size_t o = (size_t)snprintf(out, size, "%s", prefix);
  for (; *s && o + 8 < size; s++) {
    if (*s == '"' || *s == '\\') out[o++] = '\\';
    if ((unsigned char)*s < 0x20) continue;
    out[o++] = *s;
  }
  snprintf(out + o, size - o, "\"}");
}

/* odoo.c: the active ir.mail_server record Odoo sends FROM's mail through; 0 when none is active. */
extern int mail_server_record(const char *from, char *host, size_t hs, char *port, size_t ps, char *user, size_t us, char *pass, size_t pws);

/* Sends one message; fills `out` with JSON ({"sent": true, "reply": ...} or {"error": ...}), returns the HTTP status. */
int mail_send(const char *query, const char *(*conf)(const char *), char *out, size_t size) {
  char user[256], password[256], to[256], subject[256], from[256], attach_size[32];
  query_value(query, "from", 0, from, sizeof from);
  if (!from[0]) snprintf(from, sizeof from, "\"My Company\" <noreply@example.com>");
  char rec_host[256], rec_port[16], rec_user[256], rec_pass[256];
  int record = mail_server_record(from, rec_host, sizeof rec_host, rec_port, sizeof rec_port, rec_user, sizeof rec_user, rec_pass, sizeof rec_pass);
  const char *host = record ? rec_host : conf("smtp_server") ? conf("smtp_server") : "localhost";
  const char *port = record ? rec_port : conf("smtp_port") ? conf("smtp_port") : "25";
  query_value(query, "user", 0, user, sizeof user);
  query_value(query, "password", 0, password, sizeof password);
  const char *conf_user = record ? rec_user : conf("smtp_user");
  const char *conf_password = record ? rec_pass : conf("smtp_password");
  if (!user[0] && conf_user) snprintf(user, sizeof user, "%s", conf_user);
  if (!password[0] && conf_password) snprintf(password, sizeof password, "%s", conf_password);
  query_value(query, "to", 0, to, sizeof to);
  if (!to[0]) snprintf(to, sizeof to, "customer@example.com");
  query_value(query, "subject", 0, subject, sizeof subject);
  if (!subject[0]) snprintf(subject, sizeof subject, "Test message");
  query_value(query, "attach_size", 0, attach_size, sizeof attach_size);
  size_t each = attach_size[0] ? (size_t)strtoul(attach_size, NULL, 10) : 2048;

  /* The message, as build_email makes it. */
  struct mbuf msg = {0};
  char date[64], head[1024];
  time_t now = time(NULL);
  strftime(date, sizeof date, "%a, %d %b %Y %H:%M:%S +0000", gmtime(&now));
  struct timeval tv;
  gettimeofday(&tv, NULL);
  snprintf(head, sizeof head,
           "From: %s\r\nTo: %s\r\nSubject: %s\r\nDate: %s\r\nMessage-Id: <%ld.%06ld.standin@example.com>\r\n"
           "MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=\"===mixed===\"\r\n\r\n"
           "--===mixed===\r\nContent-Type: multipart/alternative; boundary=\"===alt===\"\r\n\r\n"
           "--===alt===\r\nContent-Type: text/plain; charset=\"utf-8\"\r\nContent-Transfer-Encoding: 7bit\r\n\r\n"
           "Hello,\r\n\r\nThis is %s.\r\n\r\n"
           "--===alt===\r\nContent-Type: text/html; charset=\"utf-8\"\r\nContent-Transfer-Encoding: 7bit\r\n\r\n"
           "<div><p>Hello,</p><p>This is <b>%s</b>.</p></div>\r\n\r\n--===alt===--\r\n",
           from, to, subject, date, (long)tv.tv_sec, (long)tv.tv_usec, subject, subject);
  mb_str(&msg, head);
  for (int i = 0; i < 4; i++) {
    char name[128];
    query_value(query, "attach", i, name, sizeof name);
    if (!name[0]) break;
    snprintf(head, sizeof head,
             "--===mixed===\r\nContent-Type: %s; name=\"%s\"\r\nContent-Transfer-Encoding: base64\r\n"
             "Content-Disposition: attachment; filename=\"%s\"\r\n\r\n", mimetype(name), name, name);
    mb_str(&msg, head);
    unsigned char *bytes = malloc(each ? each : 1);
    for (size_t k = 0; k < each; k++) bytes[k] = (unsigned char)('a' + k % 26);
    b64(bytes, each, &msg, 1);
    free(bytes);
  }
  mb_str(&msg, "--===mixed===--\r\n");

  struct addrinfo hints = {0}, *res = NULL;
  hints.ai_socktype = SOCK_STREAM;
  int fd = -1;
  if (getaddrinfo(host, port, &hints, &res) == 0) {
    for (struct addrinfo *a = res; a; a = a->ai_next) {
      fd = socket(a->ai_family, a->ai_socktype, a->ai_protocol);
      if (fd < 0) continue;
      struct timeval t = {10, 0};
      setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &t, sizeof t);
      if (connect(fd, a->ai_addr, a->ai_addrlen) == 0) break;
      close(fd);
      fd = -1;
    }
    freeaddrinfo(res);
  }
  if (fd < 0) {
    char why[512];
    snprintf(why, sizeof why, "Connection failed to %s:%s (Odoo: MailDeliveryException, Connection refused)", host, port);
    json_escaped(out, size, "{\"error\": \"", why);
    free(msg.data);
    return 500;
  }
  FILE *in = fdopen(dup(fd), "r");
  char line[1024], cmd[1024];
  struct mbuf ehlo = {0};
  int code = reply(in, line, sizeof line, NULL);
  if (code == 220) {
    if (write(fd, "EHLO standin\r\n", 14) < 0) code = -1;
    else code = reply(in, line, sizeof line, &ehlo);
  }
  int has_size = ehlo.data && strstr(ehlo.data, "SIZE") != NULL;
  if (code == 250 && user[0]) {
    /* smtplib.login: PLAIN when offered, else LOGIN. */
    int plain = ehlo.data && strstr(ehlo.data, "PLAIN") != NULL;
    struct mbuf token = {0};
    if (plain) {
      size_t ul = strlen(user), pl = strlen(password);
      unsigned char raw[600];
      raw[0] = 0;
      memcpy(raw + 1, user, ul);
      raw[1 + ul] = 0;
      memcpy(raw + 2 + ul, password, pl);
      b64(raw, ul + pl + 2, &token, 0);
      snprintf(cmd, sizeof cmd, "AUTH PLAIN %s\r\n", token.data);
      code = command(fd, in, cmd, line, sizeof line);
    } else {
      code = command(fd, in, "AUTH LOGIN\r\n", line, sizeof line);
      if (code == 334) {
        b64((const unsigned char *)user, strlen(user), &token, 0);
        snprintf(cmd, sizeof cmd, "%s\r\n", token.data);
        code = command(fd, in, cmd, line, sizeof line);
      }
      if (code == 334) {
        token.len = 0;
        b64((const unsigned char *)password, strlen(password), &token, 0);
        snprintf(cmd, sizeof cmd, "%s\r\n", token.data);
        code = command(fd, in, cmd, line, sizeof line);
      }
    }
    free(token.data);
    if (code == 235) code = 250;
  }
  if (code == 250) {
    const char *lt = strchr(from, '<');
    char sender[256];
    snprintf(sender, sizeof sender, "%s", lt ? lt + 1 : from);
    sender[strcspn(sender, ">")] = 0;
    if (has_size) snprintf(cmd, sizeof cmd, "MAIL FROM:<%s> SIZE=%zu\r\n", sender, msg.len);
    else snprintf(cmd, sizeof cmd, "MAIL FROM:<%s>\r\n", sender);
    code = command(fd, in, cmd, line, sizeof line);
  }
  if (code == 250) {
    snprintf(cmd, sizeof cmd, "RCPT TO:<%s>\r\n", to);
    code = command(fd, in, cmd, line, sizeof line);
  }
  if (code == 250) code = command(fd, in, "DATA\r\n", line, sizeof line);
  if (code == 354) {
    /* Dot-stuffing is not needed: no line of the message starts with a dot. */
    if (write(fd, msg.data, msg.len) < 0 || write(fd, ".\r\n", 3) < 0) code = -1;
    else code = reply(in, line, sizeof line, NULL);
  }
  int sent = code == 250;
  if (write(fd, "QUIT\r\n", 6) < 0) { /* the answer is already known */ }
  fclose(in);
  close(fd);
  free(msg.data);
  free(ehlo.data);
  json_escaped(out, size, sent ? "{\"sent\": true, \"reply\": \"" : "{\"error\": \"", code < 0 ? "the mail server closed the connection" : line);
  return sent ? 200 : 500;
}
