/*
 * A fake libnvidia-ml.so.1 for vramscope's tests.
 *
 * The REAL pynvml (nvidia-ml-py) loads this through ctypes exactly as it
 * loads NVIDIA's library: CDLL("libnvidia-ml.so.1") and getattr() of the
 * versioned symbol names.  Struct layouts and symbol names follow pynvml.py
 * and NVIDIA's NVML reference, and the fake is strict where a driver is:
 *
 *   - every device call before nvmlInit* (or after the last nvmlShutdown)
 *     returns NVML_ERROR_UNINITIALIZED; init/shutdown are reference counted;
 *   - nvmlDeviceGetMemoryInfo_v2 checks the struct version (nvmlMemory_v2 =
 *     0x02000028) and answers NVML_ERROR_ARGUMENT_VERSION_MISMATCH otherwise;
 *     the v1 call reports used INCLUDING the driver-reserved memory, as
 *     drivers >= R510 do;
 *   - the process lists implement the buffer-too-small protocol (a count too
 *     small, or a NULL buffer -> NVML_ERROR_INSUFFICIENT_SIZE and the count
 *     needed); usedGpuMemory "not available" is NVML_VALUE_NOT_AVAILABLE
 *     (unsigned long long -1), as on Windows/WDDM;
 *   - nvmlDeviceGetProcessUtilization: samples newer than lastSeenTimeStamp,
 *     one per process with non-zero SM use, NVML_ERROR_NOT_FOUND if none;
 *   - string getters answer NVML_ERROR_INSUFFICIENT_SIZE for short buffers;
 *   - a lost GPU answers NVML_ERROR_GPU_IS_LOST to every per-device call.
 *
 * State comes from the file named by $FAKE_NVML_STATE (re-read whenever its
 * inode, size or mtime changes; tests replace it atomically with rename()).
 * No file -> the driver is "not loaded".  Line format (one item per line,
 * '#' comments, numbers in decimal, "na" = not available / not supported):
 *
 *   driver loaded | not_loaded
 *   driver_version 550.54.14
 *   nvml_version 12.550.54.14
 *   cuda_driver_version 12040
 *   gpu                                   starts the next GPU (index 0, 1, ...)
 *   name NVIDIA GeForce RTX 4090          rest of the line
 *   uuid GPU-...
 *   pci_bus_id 00000000:01:00.0
 *   memory TOTAL RESERVED USED FREE       bytes (v2 meaning: used excludes reserved)
 *   memory na                             both memory calls NOT_SUPPORTED: a unified-memory
 *                                         board (GB10, Jetson); processes keep their figures
 *   memory_v2 yes | no | missing          no: NOT_SUPPORTED, missing: FUNCTION_NOT_FOUND
 *   utilization GPU MEM | na
 *   temperature C | na
 *   power MILLIWATTS | na
 *   power_limit MILLIWATTS | na
 *   process_utilization yes | no          no: NOT_SUPPORTED
 *   process_api 3 | 2                     2: the _v3 list calls are FUNCTION_NOT_FOUND
 *   lost 0 | 1
 *   proc compute|graphics PID USED|na SM|-    SM "-": no utilization sample
 *   mig na | 0 | 1                        MIG mode (na: the GPU cannot do MIG, the default)
 *   mig_device GI CI PROFILE TOTAL USED   a MIG device (slice) under the current GPU;
 *                                         the "uuid" and "proc" lines after it are the slice's
 *
 * MIG, as nvml.h specifies it: nvmlDeviceGetMaxMigDeviceCount /
 * nvmlDeviceGetMigDeviceHandleByIndex (NOT_FOUND for an empty index) give the
 * slices of a parent, nvmlDeviceGetDeviceHandleFromMigDeviceHandle the parent
 * of a slice, nvmlDeviceGetGpuInstanceId / ComputeInstanceId the instance ids
 * (NOT_SUPPORTED on a parent).  A slice's name is "<parent> MIG <profile>",
 * its UUID "MIG-...", its memory and process lists its own; the parent lists
 * every slice's processes with their instance ids.  GPU and per-process
 * utilisation are NOT_SUPPORTED on slices and on a parent in MIG mode.
 *
 * Build: gcc -shared -fPIC -O2 -Wl,-soname,libnvidia-ml.so.1 -o libnvidia-ml.so.1 fake_nvml.c
 * -DFAKE_NVML_NO_MEMORY_V2 leaves out the nvmlDeviceGetMemoryInfo_v2 symbol
 * (an old driver); -DFAKE_NVML_NO_PROC_V3 leaves out the _v3 process lists.
 */

#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <signal.h>
#include <sys/types.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>

#define EXPORT __attribute__((visibility("default")))

typedef int nvmlReturn_t;
enum {
    NVML_SUCCESS = 0,
    NVML_ERROR_UNINITIALIZED = 1,
    NVML_ERROR_INVALID_ARGUMENT = 2,
    NVML_ERROR_NOT_SUPPORTED = 3,
    NVML_ERROR_NO_PERMISSION = 4,
    NVML_ERROR_ALREADY_INITIALIZED = 5,
    NVML_ERROR_NOT_FOUND = 6,
    NVML_ERROR_INSUFFICIENT_SIZE = 7,
    NVML_ERROR_INSUFFICIENT_POWER = 8,
    NVML_ERROR_DRIVER_NOT_LOADED = 9,
    NVML_ERROR_TIMEOUT = 10,
    NVML_ERROR_IRQ_ISSUE = 11,
    NVML_ERROR_LIBRARY_NOT_FOUND = 12,
    NVML_ERROR_FUNCTION_NOT_FOUND = 13,
    NVML_ERROR_CORRUPTED_INFOROM = 14,
    NVML_ERROR_GPU_IS_LOST = 15,
    NVML_ERROR_RESET_REQUIRED = 16,
    NVML_ERROR_OPERATING_SYSTEM = 17,
    NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18,
    NVML_ERROR_IN_USE = 19,
    NVML_ERROR_MEMORY = 20,
    NVML_ERROR_NO_DATA = 21,
    NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
    NVML_ERROR_UNKNOWN = 999,
};

#define NVML_VALUE_NOT_AVAILABLE_ULL (~0ULL)
#define NVML_MEMORY_V2_VERSION 0x02000028u   /* sizeof(nvmlMemory_v2_t) | 2 << 24 */
#define NVML_TEMPERATURE_V1_VERSION 0x0100000Cu

#define MAX_GPUS 16
#define MAX_PROCS 512   /* per list per GPU */
#define MAX_MIG 7       /* MIG devices per GPU (A100/H100: at most 7) */
#define STR_LEN 96

/* ---- NVML structs (layouts as in pynvml.py) ------------------------------ */

typedef struct { unsigned long long total, free, used; } nvmlMemory_t;
typedef struct {
    unsigned int version;
    unsigned long long total, reserved, free, used;
} nvmlMemory_v2_t;
typedef struct { unsigned int gpu, memory; } nvmlUtilization_t;
typedef struct {           /* nvmlProcessInfo_v1_t */
    unsigned int pid;
    unsigned long long usedGpuMemory;
} nvmlProcessInfo_v1_t;
typedef struct {           /* nvmlProcessInfo_v2_t == nvmlProcessInfo_t (v3 calls) */
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId, computeInstanceId;
} nvmlProcessInfo_v2_t;
typedef struct {
    unsigned int pid;
    unsigned long long timeStamp;
    unsigned int smUtil, memUtil, encUtil, decUtil;
} nvmlProcessUtilizationSample_t;
typedef struct {
    char busIdLegacy[16];
    unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
    char busId[32];
} nvmlPciInfo_t;
typedef struct {
    unsigned int version;
    int sensorType;
    int temperature;
} nvmlTemperature_v1_t;

/* ---- state ------------------------------------------------------------- */

typedef struct {
    unsigned int pid;
    unsigned long long used;  /* NVML_VALUE_NOT_AVAILABLE_ULL = n/a */
    int has_sm;
    unsigned int sm;
} fake_proc;

typedef struct fake_gpu {
    char name[STR_LEN], uuid[STR_LEN], pci_bus_id[32];
    unsigned long long total, reserved, used, free;
    int memory_v2;            /* 1 yes, 0 NOT_SUPPORTED, -1 FUNCTION_NOT_FOUND */
    int has_memory;           /* 0: every memory call NOT_SUPPORTED (unified memory) */
    int has_util; unsigned int util_gpu, util_mem;
    int has_temp; unsigned int temp;
    int has_power; unsigned int power_mw;
    int has_limit; unsigned int limit_mw;
    int proc_util;            /* 1 supported */
    int proc_api;             /* 3 or 2 */
    int lost;
    int ncompute, ngraphics;
    fake_proc compute[MAX_PROCS];
    fake_proc graphics[MAX_PROCS];
    int mig_mode;             /* -1 not supported, 0 disabled, 1 enabled */
    int parent;               /* a MIG device: its parent's index; -1 for a physical GPU */
    unsigned int gi, ci;      /* a MIG device's GPU / compute instance ids */
    int nmig;                 /* a physical GPU: how many MIG devices follow in state.migs */
    int first_mig;            /* ... starting here */
} fake_gpu;

typedef struct {
    int driver_loaded;
    int drop_exited;          /* 1: like a real driver, list no process that has exited */
    char driver_version[STR_LEN], nvml_version[STR_LEN];
    int cuda_driver_version;
    int ngpus;
    fake_gpu gpus[MAX_GPUS];
    int nmigs;
    fake_gpu migs[MAX_GPUS * MAX_MIG];
} fake_state;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static fake_state state;          /* handles point into state.gpus: stable addresses */
static fake_state loading;        /* parse target, copied over `state` on success */
static int have_file = 0;
static char state_path[4096];
static struct stat state_stat;
static int init_count = 0;
static unsigned long long calls = 0;

static void gpu_defaults(fake_gpu *g, int index) {
    memset(g, 0, sizeof(*g));
    snprintf(g->name, sizeof g->name, "Fake GPU");
    snprintf(g->uuid, sizeof g->uuid, "GPU-00000000-0000-0000-0000-%012d", index);
    snprintf(g->pci_bus_id, sizeof g->pci_bus_id, "00000000:%02X:00.0", index + 1);
    g->memory_v2 = 1;
    g->has_memory = 1;
    g->proc_util = 1;
    g->proc_api = 3;
    g->mig_mode = -1;
    g->parent = -1;
}

static char *trim(char *s) {
    while (*s && isspace((unsigned char)*s)) s++;
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1])) s[--n] = 0;
    return s;
}

static int parse_ull(const char *s, unsigned long long *out) {
    char *end;
    if (!s || !*s || *s == '-') return -1;
    *out = strtoull(s, &end, 10);
    return *end ? -1 : 0;
}

static int parse_uint(const char *s, unsigned int *out) {
    unsigned long long v;
    if (parse_ull(s, &v) || v > 0xFFFFFFFFull) return -1;
    *out = (unsigned int)v;
    return 0;
}

/* "na" -> has=0; a number -> has=1 */
static int parse_opt_uint(const char *s, int *has, unsigned int *out) {
    if (s && strcmp(s, "na") == 0) { *has = 0; return 0; }
    *has = 1;
    return parse_uint(s, out);
}

static int parse_line(fake_state *st, char *line, int lineno) {
    char *s = trim(line);
    if (!*s || *s == '#') return 0;
    char *key = s;
    char *rest = s;
    while (*rest && !isspace((unsigned char)*rest)) rest++;
    if (*rest) *rest++ = 0;
    rest = trim(rest);
    char *tok[6] = {0};
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", rest);
    int nt = 0;
    for (char *save = NULL, *t = strtok_r(buf, " \t", &save); t && nt < 6;
         t = strtok_r(NULL, " \t", &save))
        tok[nt++] = t;
    fake_gpu *g = st->ngpus ? &st->gpus[st->ngpus - 1] : NULL;
    /* after a mig_device line, uuid/proc lines describe that slice */
    fake_gpu *slice = (g && g->nmig) ? &st->migs[g->first_mig + g->nmig - 1] : NULL;
    if (slice && (!strcmp(key, "uuid") || !strcmp(key, "proc"))) g = slice;

    if (!strcmp(key, "driver")) {
        if (!strcmp(rest, "loaded")) st->driver_loaded = 1;
        else if (!strcmp(rest, "not_loaded")) st->driver_loaded = 0;
        else goto bad;
    } else if (!strcmp(key, "drop_exited")) {
        if (!strcmp(rest, "1")) st->drop_exited = 1;
        else if (!strcmp(rest, "0")) st->drop_exited = 0;
        else return -1;
    } else if (!strcmp(key, "driver_version")) {
        snprintf(st->driver_version, sizeof st->driver_version, "%s", rest);
    } else if (!strcmp(key, "nvml_version")) {
        snprintf(st->nvml_version, sizeof st->nvml_version, "%s", rest);
    } else if (!strcmp(key, "cuda_driver_version")) {
        unsigned int v;
        if (parse_uint(tok[0], &v)) goto bad;
        st->cuda_driver_version = (int)v;
    } else if (!strcmp(key, "gpu")) {
        if (st->ngpus >= MAX_GPUS) goto bad;
        gpu_defaults(&st->gpus[st->ngpus], st->ngpus);
        st->ngpus++;
    } else if (!g) {
        goto bad;   /* a GPU field before any "gpu" line */
    } else if (!strcmp(key, "name")) {
        snprintf(g->name, sizeof g->name, "%s", rest);
    } else if (!strcmp(key, "uuid")) {
        snprintf(g->uuid, sizeof g->uuid, "%s", rest);
    } else if (!strcmp(key, "pci_bus_id")) {
        snprintf(g->pci_bus_id, sizeof g->pci_bus_id, "%s", rest);
    } else if (!strcmp(key, "memory")) {
        if (nt == 1 && !strcmp(tok[0], "na")) g->has_memory = 0;
        else if (nt != 4 || parse_ull(tok[0], &g->total) || parse_ull(tok[1], &g->reserved)
            || parse_ull(tok[2], &g->used) || parse_ull(tok[3], &g->free)) goto bad;
        else g->has_memory = 1;
    } else if (!strcmp(key, "memory_v2")) {
        if (!strcmp(rest, "yes")) g->memory_v2 = 1;
        else if (!strcmp(rest, "no")) g->memory_v2 = 0;
        else if (!strcmp(rest, "missing")) g->memory_v2 = -1;
        else goto bad;
    } else if (!strcmp(key, "utilization")) {
        if (nt == 1 && !strcmp(tok[0], "na")) g->has_util = 0;
        else if (nt == 2 && !parse_uint(tok[0], &g->util_gpu) && !parse_uint(tok[1], &g->util_mem))
            g->has_util = 1;
        else goto bad;
    } else if (!strcmp(key, "temperature")) {
        if (nt != 1 || parse_opt_uint(tok[0], &g->has_temp, &g->temp)) goto bad;
    } else if (!strcmp(key, "power")) {
        if (nt != 1 || parse_opt_uint(tok[0], &g->has_power, &g->power_mw)) goto bad;
    } else if (!strcmp(key, "power_limit")) {
        if (nt != 1 || parse_opt_uint(tok[0], &g->has_limit, &g->limit_mw)) goto bad;
    } else if (!strcmp(key, "process_utilization")) {
        if (!strcmp(rest, "yes")) g->proc_util = 1;
        else if (!strcmp(rest, "no")) g->proc_util = 0;
        else goto bad;
    } else if (!strcmp(key, "process_api")) {
        if (!strcmp(rest, "3")) g->proc_api = 3;
        else if (!strcmp(rest, "2")) g->proc_api = 2;
        else goto bad;
    } else if (!strcmp(key, "mig")) {
        if (!strcmp(rest, "na")) g->mig_mode = -1;
        else if (!strcmp(rest, "0")) g->mig_mode = 0;
        else if (!strcmp(rest, "1")) g->mig_mode = 1;
        else goto bad;
    } else if (!strcmp(key, "mig_device")) {
        fake_gpu *parent = &st->gpus[st->ngpus - 1];
        if (nt != 5 || parent->nmig >= MAX_MIG || st->nmigs >= MAX_GPUS * MAX_MIG) goto bad;
        if (!parent->nmig) parent->first_mig = st->nmigs;
        fake_gpu *m = &st->migs[st->nmigs];
        gpu_defaults(m, st->ngpus - 1);
        m->parent = st->ngpus - 1;
        if (parse_uint(tok[0], &m->gi) || parse_uint(tok[1], &m->ci)
            || parse_ull(tok[3], &m->total) || parse_ull(tok[4], &m->used)) goto bad;
        char parent_name[STR_LEN], parent_bus[32];
        memcpy(parent_name, parent->name, sizeof parent_name);
        memcpy(parent_bus, parent->pci_bus_id, sizeof parent_bus);
        snprintf(m->name, sizeof m->name, "%.60s MIG %.30s", parent_name, tok[2]);
        snprintf(m->uuid, sizeof m->uuid, "MIG-%08x-fake-4e56-%04x-%012x",
                 (unsigned)(st->ngpus - 1), m->gi, m->ci);
        snprintf(m->pci_bus_id, sizeof m->pci_bus_id, "%s", parent_bus);
        m->free = m->total > m->used ? m->total - m->used : 0;
        m->reserved = 0;
        m->has_util = 0;
        m->proc_util = 0;
        m->proc_api = parent->proc_api;
        st->nmigs++;
        parent->nmig++;
    } else if (!strcmp(key, "lost")) {
        if (!strcmp(rest, "1")) g->lost = 1;
        else if (!strcmp(rest, "0")) g->lost = 0;
        else goto bad;
    } else if (!strcmp(key, "proc")) {
        fake_proc p = {0};
        if (nt != 4 || parse_uint(tok[1], &p.pid)) goto bad;
        if (!strcmp(tok[2], "na")) p.used = NVML_VALUE_NOT_AVAILABLE_ULL;
        else if (parse_ull(tok[2], &p.used) || p.used == NVML_VALUE_NOT_AVAILABLE_ULL) goto bad;
        if (!strcmp(tok[3], "-")) p.has_sm = 0;
        else if (!parse_uint(tok[3], &p.sm)) p.has_sm = 1;
        else goto bad;
        if (!strcmp(tok[0], "compute")) {
            if (g->ncompute >= MAX_PROCS) goto bad;
            g->compute[g->ncompute++] = p;
        } else if (!strcmp(tok[0], "graphics")) {
            if (g->ngraphics >= MAX_PROCS) goto bad;
            g->graphics[g->ngraphics++] = p;
        } else goto bad;
    } else {
        goto bad;
    }
    return 0;
bad:
    fprintf(stderr, "fake_nvml: %s line %d: cannot read \"%s %s\"\n", state_path, lineno, key, rest);
    return -1;
}

/* Re-read the state file if it changed. Called with `lock` held. */
static void refresh_state(void) {
    const char *path = getenv("FAKE_NVML_STATE");
    struct stat sb;
    calls++;
    if (!path || !*path || stat(path, &sb) != 0) {
        if (have_file) {
            memset(&state, 0, sizeof state);
            have_file = 0;
        }
        state.driver_loaded = 0;
        state_path[0] = 0;
        return;
    }
    if (have_file && strcmp(path, state_path) == 0 && sb.st_ino == state_stat.st_ino
        && sb.st_dev == state_stat.st_dev && sb.st_size == state_stat.st_size
        && sb.st_mtim.tv_sec == state_stat.st_mtim.tv_sec
        && sb.st_mtim.tv_nsec == state_stat.st_mtim.tv_nsec)
        return;
    snprintf(state_path, sizeof state_path, "%s", path);
    FILE *f = fopen(path, "r");
    if (!f) return;   /* vanished between stat and open: keep what we had */
    memset(&loading, 0, sizeof loading);
    loading.driver_loaded = 1;
    snprintf(loading.driver_version, sizeof loading.driver_version, "550.54.14");
    snprintf(loading.nvml_version, sizeof loading.nvml_version, "12.550.54.14");
    loading.cuda_driver_version = 12040;
    char line[1024];
    int lineno = 0, ok = 1;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        if (parse_line(&loading, line, lineno)) { ok = 0; break; }
    }
    fclose(f);
    state_stat = sb;
    if (!ok) return;   /* keep the previous state; the message says why */
    memcpy(&state, &loading, sizeof state);
    have_file = 1;
}

#define ENTER() pthread_mutex_lock(&lock); refresh_state()
#define LEAVE(rc) do { nvmlReturn_t _rc = (rc); pthread_mutex_unlock(&lock); return _rc; } while (0)

static int is_mig(const fake_gpu *dev) {
    return dev >= state.migs && dev < state.migs + state.nmigs;
}

static nvmlReturn_t check_device(fake_gpu *dev) {
    if (init_count <= 0) return NVML_ERROR_UNINITIALIZED;
    int physical = dev && dev >= state.gpus && dev < state.gpus + state.ngpus
        && ((char *)dev - (char *)state.gpus) % sizeof(fake_gpu) == 0;
    int mig = dev && is_mig(dev) && ((char *)dev - (char *)state.migs) % sizeof(fake_gpu) == 0;
    if (!physical && !mig) return NVML_ERROR_INVALID_ARGUMENT;
    if (mig && state.gpus[dev->parent].mig_mode != 1) return NVML_ERROR_INVALID_ARGUMENT;
    if (dev->lost || (mig && state.gpus[dev->parent].lost)) return NVML_ERROR_GPU_IS_LOST;
    return NVML_SUCCESS;
}

/* A parent in MIG mode answers for its slices, not for itself. */
static int in_mig_mode(const fake_gpu *dev) {
    return is_mig(dev) || dev->mig_mode == 1;
}

#define DEVICE_CALL(dev) ENTER(); { nvmlReturn_t _c = check_device(dev); if (_c) LEAVE(_c); }

static nvmlReturn_t copy_string(char *dst, unsigned int len, const char *src) {
    if (!dst) return NVML_ERROR_INVALID_ARGUMENT;
    if (strlen(src) + 1 > len) return NVML_ERROR_INSUFFICIENT_SIZE;
    memcpy(dst, src, strlen(src) + 1);
    return NVML_SUCCESS;
}

/* ---- init / shutdown / errors ------------------------------------------ */

EXPORT nvmlReturn_t nvmlInitWithFlags(unsigned int flags) {
    (void)flags;
    ENTER();
    if (!state.driver_loaded) LEAVE(NVML_ERROR_DRIVER_NOT_LOADED);
    init_count++;
    LEAVE(NVML_SUCCESS);
}
EXPORT nvmlReturn_t nvmlInit_v2(void) { return nvmlInitWithFlags(0); }
EXPORT nvmlReturn_t nvmlInit(void) { return nvmlInitWithFlags(0); }

EXPORT nvmlReturn_t nvmlShutdown(void) {
    ENTER();
    if (init_count <= 0) LEAVE(NVML_ERROR_UNINITIALIZED);
    init_count--;
    LEAVE(NVML_SUCCESS);
}

EXPORT const char *nvmlErrorString(nvmlReturn_t result) {
    switch (result) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_NO_PERMISSION: return "Insufficient Permissions";
    case NVML_ERROR_ALREADY_INITIALIZED: return "Already Initialized";
    case NVML_ERROR_NOT_FOUND: return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
    case NVML_ERROR_INSUFFICIENT_POWER: return "Insufficient External Power";
    case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
    case NVML_ERROR_TIMEOUT: return "Timeout";
    case NVML_ERROR_IRQ_ISSUE: return "Interrupt Request Issue";
    case NVML_ERROR_LIBRARY_NOT_FOUND: return "NVML Shared Library Not Found";
    case NVML_ERROR_FUNCTION_NOT_FOUND: return "Function Not Found";
    case NVML_ERROR_CORRUPTED_INFOROM: return "Corrupted infoROM";
    case NVML_ERROR_GPU_IS_LOST: return "GPU is lost";
    case NVML_ERROR_RESET_REQUIRED: return "GPU requires restart";
    case NVML_ERROR_OPERATING_SYSTEM: return "The operating system has blocked the request.";
    case NVML_ERROR_LIB_RM_VERSION_MISMATCH: return "RM has detected an NVML/RM version mismatch.";
    case NVML_ERROR_MEMORY: return "Insufficient Memory";
    case NVML_ERROR_NO_DATA: return "No data";
    case NVML_ERROR_ARGUMENT_VERSION_MISMATCH: return "Argument version mismatch";
    default: return "Unknown Error";
    }
}

/* ---- system ------------------------------------------------------------ */

EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length) {
    ENTER();
    if (init_count <= 0) LEAVE(NVML_ERROR_UNINITIALIZED);
    LEAVE(copy_string(version, length, state.driver_version));
}

EXPORT nvmlReturn_t nvmlSystemGetNVMLVersion(char *version, unsigned int length) {
    ENTER();
    if (init_count <= 0) LEAVE(NVML_ERROR_UNINITIALIZED);
    LEAVE(copy_string(version, length, state.nvml_version));
}

EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *v) {
    ENTER();
    if (init_count <= 0) LEAVE(NVML_ERROR_UNINITIALIZED);
    if (!v) LEAVE(NVML_ERROR_INVALID_ARGUMENT);
    *v = state.cuda_driver_version;
    LEAVE(NVML_SUCCESS);
}
EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *v) { return nvmlSystemGetCudaDriverVersion(v); }

/* ---- device enumeration --------------------------------------------------- */

EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count) {
    ENTER();
    if (init_count <= 0) LEAVE(NVML_ERROR_UNINITIALIZED);
    if (!count) LEAVE(NVML_ERROR_INVALID_ARGUMENT);
    *count = (unsigned int)state.ngpus;
    LEAVE(NVML_SUCCESS);
}
EXPORT nvmlReturn_t nvmlDeviceGetCount(unsigned int *count) { return nvmlDeviceGetCount_v2(count); }

EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, fake_gpu **device) {
    ENTER();
    if (init_count <= 0) LEAVE(NVML_ERROR_UNINITIALIZED);
    if (!device || index >= (unsigned int)state.ngpus) LEAVE(NVML_ERROR_INVALID_ARGUMENT);
    if (state.gpus[index].lost) LEAVE(NVML_ERROR_GPU_IS_LOST);
    *device = &state.gpus[index];
    LEAVE(NVML_SUCCESS);
}
EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, fake_gpu **device) {
    return nvmlDeviceGetHandleByIndex_v2(index, device);
}

EXPORT nvmlReturn_t nvmlDeviceGetIndex(fake_gpu *dev, unsigned int *index) {
    DEVICE_CALL(dev);
    if (!index) LEAVE(NVML_ERROR_INVALID_ARGUMENT);
    *index = (unsigned int)(dev - state.gpus);
    LEAVE(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetName(fake_gpu *dev, char *name, unsigned int length) {
    DEVICE_CALL(dev);
    LEAVE(copy_string(name, length, dev->name));
}

EXPORT nvmlReturn_t nvmlDeviceGetUUID(fake_gpu *dev, char *uuid, unsigned int length) {
    DEVICE_CALL(dev);
    LEAVE(copy_string(uuid, length, dev->uuid));
}

EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(fake_gpu *dev, nvmlPciInfo_t *pci) {
    DEVICE_CALL(dev);
    if (!pci) LEAVE(NVML_ERROR_INVALID_ARGUMENT);
    memset(pci, 0, sizeof *pci);
    unsigned int domain = 0, bus = 0, device = 0, function = 0;
    sscanf(dev->pci_bus_id, "%x:%x:%x.%x", &domain, &bus, &device, &function);
    pci->domain = domain;
    pci->bus = bus;
    pci->device = device;
    pci->pciDeviceId = 0x268410DE;
    snprintf(pci->busId, sizeof pci->busId, "%s", dev->pci_bus_id);
    snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "%04X:%02X:%02X.%X", domain, bus, device, function);
    LEAVE(NVML_SUCCESS);
}

/* ---- memory -------------------------------------------------------------- */

EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(fake_gpu *dev, nvmlMemory_t *mem) {
    DEVICE_CALL(dev);
    if (!dev->has_memory) LEAVE(NVML_ERROR_NOT_SUPPORTED);
    if (!mem) LEAVE(NVML_ERROR_INVALID_ARGUMENT);
    mem->total = dev->total;
    mem->free = dev->free;
    mem->used = dev->used + dev->reserved;   /* v1 counts reserved as used */
    LEAVE(NVML_SUCCESS);
}

#ifndef FAKE_NVML_NO_MEMORY_V2
EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(fake_gpu *dev, nvmlMemory_v2_t *mem) {
    DEVICE_CALL(dev);
    if (dev->memory_v2 < 0) LEAVE(NVML_ERROR_FUNCTION_NOT_FOUND);
    if (dev->memory_v2 == 0 || !dev->has_memory) LEAVE(NVML_ERROR_NOT_SUPPORTED);
    if (!mem) LEAVE(NVML_ERROR_INVALID_ARGUMENT);
    if (mem->version != NVML_MEMORY_V2_VERSION) LEAVE(NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
    mem->total = dev->total;
    mem->reserved = dev->reserved;
    mem->used = dev->used;
    mem->free = dev->free;
    LEAVE(NVML_SUCCESS);
}
#endif

/* ---- utilization, temperature, power --------------------------------------- */

EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(fake_gpu *dev, nvmlUtilization_t *u) {
    DEVICE_CALL(dev);
    if (!u) LEAVE(NVML_ERROR_INVALID_ARGUMENT);
    if (!dev->has_util || in_mig_mode(dev)) LEAVE(NVML_ERROR_NOT_SUPPORTED);
    u->gpu = dev->util_gpu;
    u->memory = dev->util_mem;
    LEAVE(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetTemperature(fake_gpu *dev, int sensor, unsigned int *temp) {
    DEVICE_CALL(dev);
    if (!temp || sensor != 0) LEAVE(NVML_ERROR_INVALID_ARGUMENT);
    if (!dev->has_temp || is_mig(dev)) LEAVE(NVML_ERROR_NOT_SUPPORTED);
    *temp = dev->temp;
    LEAVE(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetTemperatureV(fake_gpu *dev, nvmlTemperature_v1_t *t) {
    DEVICE_CALL(dev);
    if (!t) LEAVE(NVML_ERROR_INVALID_ARGUMENT);
    if (t->version != NVML_TEMPERATURE_V1_VERSION) LEAVE(NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
    if (t->sensorType != 0) LEAVE(NVML_ERROR_INVALID_ARGUMENT);
    if (!dev->has_temp || is_mig(dev)) LEAVE(NVML_ERROR_NOT_SUPPORTED);
    t->temperature = (int)dev->temp;
    LEAVE(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetPowerUsage(fake_gpu *dev, unsigned int *mw) {
    DEVICE_CALL(dev);
    if (!mw) LEAVE(NVML_ERROR_INVALID_ARGUMENT);
    if (!dev->has_power || is_mig(dev)) LEAVE(NVML_ERROR_NOT_SUPPORTED);
    *mw = dev->power_mw;
    LEAVE(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(fake_gpu *dev, unsigned int *mw) {
    DEVICE_CALL(dev);
    if (!mw) LEAVE(NVML_ERROR_INVALID_ARGUMENT);
    if (!dev->has_limit || is_mig(dev)) LEAVE(NVML_ERROR_NOT_SUPPORTED);
    *mw = dev->limit_mw;
    LEAVE(NVML_SUCCESS);
}
EXPORT nvmlReturn_t nvmlDeviceGetPowerManagementLimit(fake_gpu *dev, unsigned int *mw) {
    return nvmlDeviceGetEnforcedPowerLimit(dev, mw);
}

/* ---- process lists ------------------------------------------------------- */

/* With drop_exited, the processes still alive (a real driver frees an exited
 * process's memory and stops listing it). Called under the lock. */
static fake_proc live_buf[MAX_PROCS];
static const fake_proc *live_procs(const fake_proc *src, int *n) {
    if (!state.drop_exited) return src;
    int k = 0;
    for (int i = 0; i < *n; i++)
        if (!(kill((pid_t)src[i].pid, 0) == -1 && errno == ESRCH)) live_buf[k++] = src[i];
    *n = k;
    return live_buf;
}

/* The buffer-too-small protocol: *count in = capacity, out = entries (or needed). */
/* The processes a device lists, with their instance ids: its own, or for a
 * parent in MIG mode those of every slice.  Called under the lock. */
static fake_proc all_buf[MAX_PROCS * (MAX_MIG + 1)];
static unsigned int all_gi[MAX_PROCS * (MAX_MIG + 1)], all_ci[MAX_PROCS * (MAX_MIG + 1)];
static int gather(const fake_gpu *dev, int graphics) {
    int n = 0;
    const fake_gpu *from[MAX_MIG + 1];
    int nfrom = 0;
    if (!is_mig(dev) && dev->mig_mode == 1) {
        for (int i = 0; i < dev->nmig; i++) from[nfrom++] = &state.migs[dev->first_mig + i];
    } else {
        from[nfrom++] = dev;
    }
    for (int f = 0; f < nfrom; f++) {
        const fake_gpu *d = from[f];
        int k = graphics ? d->ngraphics : d->ncompute;
        const fake_proc *src = live_procs(graphics ? d->graphics : d->compute, &k);
        for (int i = 0; i < k && n < MAX_PROCS * (MAX_MIG + 1); i++) {
            all_buf[n] = src[i];
            all_gi[n] = is_mig(d) ? d->gi : 0xFFFFFFFFu;   /* 0xFFFFFFFF: not in MIG mode */
            all_ci[n] = is_mig(d) ? d->ci : 0xFFFFFFFFu;
            n++;
        }
    }
    return n;
}

static nvmlReturn_t list_v2(const fake_gpu *dev, int graphics, unsigned int *count, nvmlProcessInfo_v2_t *infos) {
    if (!count) return NVML_ERROR_INVALID_ARGUMENT;
    int n = gather(dev, graphics);
    const fake_proc *src = all_buf;
    if (*count < (unsigned int)n || (!infos && n > 0)) {
        *count = (unsigned int)n;
        return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    if (!infos && *count > 0) return NVML_ERROR_INVALID_ARGUMENT;
    for (int i = 0; i < n; i++) {
        infos[i].pid = src[i].pid;
        infos[i].usedGpuMemory = src[i].used;
        infos[i].gpuInstanceId = all_gi[i];
        infos[i].computeInstanceId = all_ci[i];
    }
    *count = (unsigned int)n;
    return NVML_SUCCESS;
}

static nvmlReturn_t list_v1(const fake_gpu *dev, int graphics, unsigned int *count, nvmlProcessInfo_v1_t *infos) {
    if (!count) return NVML_ERROR_INVALID_ARGUMENT;
    int n = gather(dev, graphics);
    const fake_proc *src = all_buf;
    if (*count < (unsigned int)n || (!infos && n > 0)) {
        *count = (unsigned int)n;
        return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    if (!infos && *count > 0) return NVML_ERROR_INVALID_ARGUMENT;
    for (int i = 0; i < n; i++) {
        infos[i].pid = src[i].pid;
        infos[i].usedGpuMemory = src[i].used;
    }
    *count = (unsigned int)n;
    return NVML_SUCCESS;
}

#ifndef FAKE_NVML_NO_PROC_V3
EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(fake_gpu *dev, unsigned int *count, nvmlProcessInfo_v2_t *infos) {
    DEVICE_CALL(dev);
    if (dev->proc_api < 3) LEAVE(NVML_ERROR_FUNCTION_NOT_FOUND);
    LEAVE(list_v2(dev, 0, count, infos));
}
EXPORT nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v3(fake_gpu *dev, unsigned int *count, nvmlProcessInfo_v2_t *infos) {
    DEVICE_CALL(dev);
    if (dev->proc_api < 3) LEAVE(NVML_ERROR_FUNCTION_NOT_FOUND);
    LEAVE(list_v2(dev, 1, count, infos));
}
#endif

EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(fake_gpu *dev, unsigned int *count, nvmlProcessInfo_v2_t *infos) {
    DEVICE_CALL(dev);
    LEAVE(list_v2(dev, 0, count, infos));
}
EXPORT nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v2(fake_gpu *dev, unsigned int *count, nvmlProcessInfo_v2_t *infos) {
    DEVICE_CALL(dev);
    LEAVE(list_v2(dev, 1, count, infos));
}
EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(fake_gpu *dev, unsigned int *count, nvmlProcessInfo_v1_t *infos) {
    DEVICE_CALL(dev);
    LEAVE(list_v1(dev, 0, count, infos));
}
EXPORT nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses(fake_gpu *dev, unsigned int *count, nvmlProcessInfo_v1_t *infos) {
    DEVICE_CALL(dev);
    LEAVE(list_v1(dev, 1, count, infos));
}

/* ---- per-process utilization ----------------------------------------------- */

/* Samples are stamped "now" (CPU time, microseconds), one per distinct PID
 * whose SM figure is given; a process with no sample had no SM activity. */
EXPORT nvmlReturn_t nvmlDeviceGetProcessUtilization(fake_gpu *dev, nvmlProcessUtilizationSample_t *samples,
                                                    unsigned int *count, unsigned long long lastSeenTimeStamp) {
    DEVICE_CALL(dev);
    if (!count) LEAVE(NVML_ERROR_INVALID_ARGUMENT);
    if (!dev->proc_util || in_mig_mode(dev)) LEAVE(NVML_ERROR_NOT_SUPPORTED);
    struct timeval tv;
    gettimeofday(&tv, NULL);
    unsigned long long now = (unsigned long long)tv.tv_sec * 1000000ull + (unsigned long long)tv.tv_usec;
    if (now <= lastSeenTimeStamp) LEAVE(NVML_ERROR_NOT_FOUND);
    static nvmlProcessUtilizationSample_t out[2 * MAX_PROCS];
    unsigned int n = 0;
    const fake_proc *lists[2] = {dev->compute, dev->graphics};
    int sizes[2] = {dev->ncompute, dev->ngraphics};
    for (int l = 0; l < 2; l++) {
        for (int i = 0; i < sizes[l]; i++) {
            const fake_proc *p = &lists[l][i];
            if (!p->has_sm) continue;
            unsigned int j;
            for (j = 0; j < n && out[j].pid != p->pid; j++) {}
            if (j < n) continue;
            out[n].pid = p->pid;
            out[n].timeStamp = now;
            out[n].smUtil = p->sm;
            out[n].memUtil = 0;
            out[n].encUtil = 0;
            out[n].decUtil = 0;
            n++;
        }
    }
    if (n == 0) LEAVE(NVML_ERROR_NOT_FOUND);
    if (!samples || *count < n) {
        *count = n;
        LEAVE(NVML_ERROR_INSUFFICIENT_SIZE);
    }
    memcpy(samples, out, n * sizeof *out);
    *count = n;
    LEAVE(NVML_SUCCESS);
}

/* ---- queries a monitor like nvitop makes that this fake does not model --------
 * They exist (a real driver has the symbols) and answer NOT_SUPPORTED, as on a
 * GPU without the feature, so peers compared in bench/ take their normal path. */

#define NOT_SUPPORTED_STUB(fn) \
    EXPORT nvmlReturn_t fn(fake_gpu *dev, ...) { DEVICE_CALL(dev); LEAVE(NVML_ERROR_NOT_SUPPORTED); }

NOT_SUPPORTED_STUB(nvmlDeviceGetClockInfo)
NOT_SUPPORTED_STUB(nvmlDeviceGetMaxClockInfo)
NOT_SUPPORTED_STUB(nvmlDeviceGetComputeMode)
NOT_SUPPORTED_STUB(nvmlDeviceGetDecoderUtilization)
NOT_SUPPORTED_STUB(nvmlDeviceGetEncoderUtilization)
NOT_SUPPORTED_STUB(nvmlDeviceGetDisplayActive)
NOT_SUPPORTED_STUB(nvmlDeviceGetDisplayMode)
NOT_SUPPORTED_STUB(nvmlDeviceGetDriverModel)
NOT_SUPPORTED_STUB(nvmlDeviceGetDriverModel_v2)
NOT_SUPPORTED_STUB(nvmlDeviceGetFanSpeed)
NOT_SUPPORTED_STUB(nvmlDeviceGetPcieThroughput)
NOT_SUPPORTED_STUB(nvmlDeviceGetPerformanceState)
NOT_SUPPORTED_STUB(nvmlDeviceGetPersistenceMode)
NOT_SUPPORTED_STUB(nvmlDeviceGetTotalEccErrors)

EXPORT nvmlReturn_t nvmlDeviceGetCudaComputeCapability(fake_gpu *dev, int *major, int *minor) {
    DEVICE_CALL(dev);
    if (!major || !minor) LEAVE(NVML_ERROR_INVALID_ARGUMENT);
    *major = 9;
    *minor = 0;
    LEAVE(NVML_SUCCESS);
}

/* ---- MIG ------------------------------------------------------------------ */

EXPORT nvmlReturn_t nvmlDeviceGetMigMode(fake_gpu *dev, unsigned int *current, unsigned int *pending) {
    DEVICE_CALL(dev);
    if (!current || !pending) LEAVE(NVML_ERROR_INVALID_ARGUMENT);
    if (is_mig(dev) || dev->mig_mode < 0) LEAVE(NVML_ERROR_NOT_SUPPORTED);
    *current = *pending = (unsigned int)dev->mig_mode;
    LEAVE(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceIsMigDeviceHandle(fake_gpu *dev, unsigned int *isMig) {
    DEVICE_CALL(dev);
    if (!isMig) LEAVE(NVML_ERROR_INVALID_ARGUMENT);
    *isMig = (unsigned int)is_mig(dev);
    LEAVE(NVML_SUCCESS);
}

/* nvml.h: "Returns zero if MIG is not supported or enabled." */
EXPORT nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(fake_gpu *dev, unsigned int *count) {
    DEVICE_CALL(dev);
    if (!count) LEAVE(NVML_ERROR_INVALID_ARGUMENT);
    if (is_mig(dev)) LEAVE(NVML_ERROR_INVALID_ARGUMENT);
    *count = dev->mig_mode == 1 ? MAX_MIG : 0;
    LEAVE(NVML_SUCCESS);
}

/* Slices are laid out at odd indices, so a caller must not stop at the first
 * empty one (nvml.h: NOT_FOUND "if no valid MIG device was found at index"). */
EXPORT nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(fake_gpu *dev, unsigned int index, fake_gpu **mig) {
    DEVICE_CALL(dev);
    if (!mig || is_mig(dev)) LEAVE(NVML_ERROR_INVALID_ARGUMENT);
    if (dev->mig_mode != 1) LEAVE(NVML_ERROR_NOT_SUPPORTED);
    if (index >= MAX_MIG) LEAVE(NVML_ERROR_INVALID_ARGUMENT);
    unsigned int slot = MAX_MIG - 1 - index;   /* reversed: the first indices may be empty */
    if (slot >= (unsigned int)dev->nmig) LEAVE(NVML_ERROR_NOT_FOUND);
    *mig = &state.migs[dev->first_mig + (int)slot];
    LEAVE(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetDeviceHandleFromMigDeviceHandle(fake_gpu *mig, fake_gpu **dev) {
    DEVICE_CALL(mig);
    if (!dev || !is_mig(mig)) LEAVE(NVML_ERROR_INVALID_ARGUMENT);
    *dev = &state.gpus[mig->parent];
    LEAVE(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceId(fake_gpu *dev, unsigned int *id) {
    DEVICE_CALL(dev);
    if (!id) LEAVE(NVML_ERROR_INVALID_ARGUMENT);
    if (!is_mig(dev)) LEAVE(NVML_ERROR_NOT_SUPPORTED);
    *id = dev->gi;
    LEAVE(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetComputeInstanceId(fake_gpu *dev, unsigned int *id) {
    DEVICE_CALL(dev);
    if (!id) LEAVE(NVML_ERROR_INVALID_ARGUMENT);
    if (!is_mig(dev)) LEAVE(NVML_ERROR_NOT_SUPPORTED);
    *id = dev->ci;
    LEAVE(NVML_SUCCESS);
}

/* ---- test hooks (not NVML) -------------------------------------------------- */

EXPORT int fakeNvmlInitCount(void) { return init_count; }
EXPORT unsigned long long fakeNvmlCalls(void) { return calls; }
EXPORT void fakeNvmlReset(void) {
    pthread_mutex_lock(&lock);
    init_count = 0;
    calls = 0;
    have_file = 0;
    memset(&state_stat, 0, sizeof state_stat);
    pthread_mutex_unlock(&lock);
}
