/* A partition written in C (issue 35): compiled as C, it uses only
 * include/doorbell/partition_ports_c.h. PartitionPorts.ACPartitionTalksToACppPartition
 * (partition_ports_test.cpp) runs it as partition "c" of a real schedule
 * beside a C++ entry partition "cpp":
 *   cpp -> c   sampling "tm"  "telemetry 42";  queuing "cmd"  "command 7"
 *   c -> cpp   sampling "ctm" "from c";        queuing "ack"  "ack: command 7"
 * It asserts what it receives and exits 0, or with the number of the check
 * that failed. */
#ifdef __cplusplus
#error "this test must be compiled as C"
#endif

#include <stdio.h>
#include <string.h>

#include "doorbell/partition_ports_c.h"

#define CHECK(n, condition)                                                 \
  do {                                                                      \
    if (!(condition)) {                                                     \
      fprintf(stderr, "C partition: check %d failed: %s\n", n, #condition); \
      return n;                                                             \
    }                                                                       \
  } while (0)

int main(void) {
  doorbell_ports* ports = doorbell_ports_open();
  CHECK(10, ports != NULL);
  doorbell_port* tm = doorbell_port_open(ports, "tm", DOORBELL_PORT_SAMPLING);
  doorbell_port* cmd = doorbell_port_open(ports, "cmd", DOORBELL_PORT_QUEUING);
  doorbell_port* ctm = doorbell_port_open(ports, "ctm", DOORBELL_PORT_SAMPLING);
  doorbell_port* ack = doorbell_port_open(ports, "ack", DOORBELL_PORT_QUEUING);
  CHECK(11, tm != NULL && cmd != NULL && ctm != NULL && ack != NULL);
  CHECK(12, doorbell_port_open(ports, "tm", DOORBELL_PORT_QUEUING) == NULL); /* wrong kind */
  CHECK(13, doorbell_port_open(ports, "nope", DOORBELL_PORT_SAMPLING) == NULL);

  /* The command: waits across the windows (10 s at most). */
  char command[64];
  size_t command_size = sizeof command;
  int rc = doorbell_queuing_receive(cmd, command, &command_size, 10000000000LL);
  CHECK(20, rc == DOORBELL_PORT_OK);
  CHECK(21, command_size == strlen("command 7") && memcmp(command, "command 7", command_size) == 0);
  char buffer[64];
  size_t size = sizeof buffer;
  size = sizeof buffer;
  CHECK(22, doorbell_queuing_receive(cmd, buffer, &size, 0) == DOORBELL_PORT_EMPTY);

  /* The telemetry, written before the command was sent. */
  size = sizeof buffer;
  int valid = 0;
  rc = doorbell_sampling_read(tm, buffer, &size, &valid);
  CHECK(30, rc == DOORBELL_PORT_OK && valid == 1);
  CHECK(31, size == strlen("telemetry 42") && memcmp(buffer, "telemetry 42", size) == 0);
  CHECK(32, doorbell_sampling_write(tm, "x", 1) == DOORBELL_PORT_WRONG_DIRECTION);

  /* The answers. */
  CHECK(40, doorbell_sampling_write(ctm, "from c", strlen("from c")) == DOORBELL_PORT_OK);
  char reply[64];
  snprintf(reply, sizeof reply, "ack: %.*s", (int)command_size, command);
  CHECK(41, doorbell_queuing_send(ack, reply, strlen(reply)) == DOORBELL_PORT_OK);
  CHECK(42, doorbell_queuing_send(ack, buffer, 17) == DOORBELL_PORT_TOO_LARGE); /* 16 B */

  doorbell_port_close(tm);
  doorbell_port_close(cmd);
  doorbell_port_close(ctm);
  doorbell_port_close(ack);
  doorbell_ports_close(ports);
  return 0;
}
