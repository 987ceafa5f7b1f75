/* The limits on what a client may send, checked by validate*.c. */
#ifndef PX_BOUNDS_H
#define PX_BOUNDS_H

#define PX_MAX_FRAME (1u << 20)          /* bytes of one frame's message */
#define PX_MAX_BULK (64u << 20)          /* bulk bytes after one message */
#define PX_MAX_LIST 4096                 /* ids in a list (wait lists, ...) */
#define PX_MIN_BEAT_MS 10                /* heartbeat intervals, ms */
#define PX_MAX_BEAT_MS 600000
#define PX_MAX_PROPS 64                  /* property words */
#define PX_MAX_DEVICES 256               /* devices named by one call */
#define PX_MAX_NAME 1024                 /* kernel names, programs, ... */
#define PX_MAX_OPTIONS (64u << 10)       /* build options */
#define PX_MAX_ARG (64u << 10)           /* bytes of one kernel argument */
#define PX_MAX_INFO (64u << 20)          /* bytes of one info value */
#define PX_MAX_TOKEN 64                  /* resume token bytes */
#define PX_MAX_PATTERN 128               /* fill pattern bytes */
#define PX_MAX_SVM (1ull << 40)          /* bytes of one SVM allocation */

#endif /* PX_BOUNDS_H */
