/* Partition ports, the C-callable subset (include/doorbell/partition_ports.h
 * has the whole API and its guarantees): a partition need not be C++. This
 * header is C (C99 and later) and C++; partition_ports.h includes it.
 *
 * Return values of the int functions: DOORBELL_PORT_OK (0), else one of
 * the DOORBELL_PORT_* statuses below (a PortStatus value + 1), or -1: no
 * such port, a null argument, or a port of the other kind.
 *
 *   doorbell_ports* ports = doorbell_ports_open();     // DOORBELL_PORTS_FD
 *   doorbell_port* tm = doorbell_port_open(ports, "telemetry", DOORBELL_PORT_SAMPLING);
 *   doorbell_sampling_write(tm, data, size);
 *   doorbell_port_close(tm);
 *   doorbell_ports_close(ports);
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Port kinds (doorbell_port_open's kind). */
#define DOORBELL_PORT_SAMPLING 0
#define DOORBELL_PORT_QUEUING 1

/* Statuses: doorbell::partition::PortStatus + 1 (0 is ok). */
#define DOORBELL_PORT_OK 0
#define DOORBELL_PORT_EMPTY 2           /* nothing written yet / no message (no wait) */
#define DOORBELL_PORT_TIMED_OUT 3       /* queuing: no message within the timeout */
#define DOORBELL_PORT_FULL 4            /* queuing: a destination was full; counted there */
#define DOORBELL_PORT_TOO_LARGE 5       /* larger than the channel's message_size */
#define DOORBELL_PORT_WRONG_DIRECTION 6 /* write/send on a destination, read/receive on a source */
#define DOORBELL_PORT_BUSY 7            /* sampling: the writer rewrote the slot on every retry */

typedef struct doorbell_ports doorbell_ports;
typedef struct doorbell_port doorbell_port;

/* From the environment (DOORBELL_PORTS_FD, DOORBELL_PARTITION); null when
 * there is no port memory. */
doorbell_ports* doorbell_ports_open(void);
void doorbell_ports_close(doorbell_ports* ports);
/* kind: DOORBELL_PORT_SAMPLING or DOORBELL_PORT_QUEUING. Null when this
 * partition has no such port of that kind. */
doorbell_port* doorbell_port_open(doorbell_ports* ports, const char* port, int kind);
void doorbell_port_close(doorbell_port* port);
int doorbell_sampling_write(doorbell_port* port, const void* data, size_t size);
/* *size in: the buffer's size; out: bytes copied. *valid (may be null): 1
 * when the message is fresh (its age <= the refresh period), else 0. */
int doorbell_sampling_read(doorbell_port* port, void* buffer, size_t* size, int* valid);
int doorbell_queuing_send(doorbell_port* port, const void* data, size_t size);
/* *size in: the buffer's size; out: bytes copied. timeout_ns 0: no wait;
 * < 0: wait for ever. */
int doorbell_queuing_receive(doorbell_port* port, void* buffer, size_t* size, int64_t timeout_ns);

#ifdef __cplusplus
}
#endif
