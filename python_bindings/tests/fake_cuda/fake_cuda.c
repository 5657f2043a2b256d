/* A stand-in for libcuda.so.1 that runs on any machine, for the tests of the
 * GPU path without a GPU (python_bindings/tests/test_fake_device.py): the
 * runtime loads it through $CASCADE_CUDA_DRIVER. "Device memory" is host
 * memory, copies are memcpy, memsets fill bytes, and a kernel launch runs
 * nothing but is recorded (kernel name, grid, block, shared bytes and its
 * parameter values, counted from the PTX .entry), so a test can check what
 * would have been launched with which arguments. Graphs built node by node
 * keep a copy of each kernel node's launch; launching the graph records its
 * nodes in order, as if they ran. Device and page-locked memory, streams,
 * events, graphs and graph executables are counted while alive, so a test
 * can check that everything a wrapper created is released. Tensor maps
 * (cuTensorMapEncodeTiled) are not encoded: the call's arguments are
 * recorded and the map is filled with a byte pattern. One device:
 * 132 SMs, sm_90. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;

#define MAX_LAUNCHES 4096
#define MAX_PARAMS 256

struct fn {
  char name[256];
  int nparams;
};
struct launch {
  char name[256];
  unsigned grid[3], block[3], shared;
  int programmatic; /* cuLaunchKernelEx with programmatic serialization */
  int nparams;
  uint64_t params[MAX_PARAMS];
};
static struct launch launches[MAX_LAUNCHES];
static int nlaunches;
static int ctx_token = 1;
static void *current;
static long live_objects;

/* Number of .param entries of `.entry name(` in the PTX text. */
static int count_params(const char *ptx, const char *name) {
  char pat[300];
  snprintf(pat, sizeof pat, ".entry %s(", name);
  const char *p = strstr(ptx, pat);
  if (!p)
    return -1;
  const char *end = strchr(p, ')');
  int n = 0;
  for (const char *q = strstr(p, ".param"); q && q < end; q = strstr(q + 6, ".param"))
    ++n;
  return n;
}

CUresult cuInit(unsigned f) { (void)f; return 0; }
CUresult cuGetErrorName(CUresult r, const char **s) { (void)r; *s = "CUDA_ERROR_FAKE"; return 0; }
CUresult cuGetErrorString(CUresult r, const char **s) { (void)r; *s = "fake driver"; return 0; }
CUresult cuDeviceGet(int *d, int i) { *d = i; return i == 0 ? 0 : 101; }
CUresult cuDeviceGetCount(int *n) { *n = 1; return 0; }
CUresult cuDeviceGetAttribute(int *v, int attr, int d) {
  (void)d;
  *v = attr == 16 ? 132 : attr == 75 ? 9 : attr == 76 ? 0 : 1;
  return 0;
}
CUresult cuDevicePrimaryCtxRetain(void **c, int d) { (void)d; *c = &ctx_token; return 0; }
CUresult cuCtxSetCurrent(void *c) { current = c; return 0; }
CUresult cuCtxGetCurrent(void **c) { *c = current; return 0; }
CUresult cuCtxSynchronize(void) { return 0; }
CUresult cuModuleLoadData(void **m, const void *image) { *m = strdup((const char *)image); return 0; }
CUresult cuModuleLoadDataEx(void **m, const void *image, unsigned n, int *o, void **v) {
  (void)n; (void)o; (void)v;
  return cuModuleLoadData(m, image);
}
CUresult cuModuleUnload(void *m) { free(m); return 0; }
CUresult cuModuleGetFunction(void **f, void *m, const char *name) {
  int n = count_params((const char *)m, name);
  if (n < 0)
    return 500; /* CUDA_ERROR_NOT_FOUND */
  struct fn *fn = calloc(1, sizeof *fn);
  snprintf(fn->name, sizeof fn->name, "%s", name);
  fn->nparams = n;
  *f = fn;
  return 0;
}
CUresult cuFuncSetAttribute(void *f, int a, int v) { (void)f; (void)a; (void)v; return 0; }
CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *n, void *f, int t, size_t s) {
  (void)f; (void)t; (void)s;
  *n = 2;
  return 0;
}
CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                        unsigned by, unsigned bz, unsigned shared, void *stream,
                        void **params, void **extra) {
  (void)stream; (void)extra;
  struct fn *fn = f;
  if (nlaunches == MAX_LAUNCHES)
    return 1;
  struct launch *l = &launches[nlaunches++];
  snprintf(l->name, sizeof l->name, "%s", fn->name);
  l->grid[0] = gx; l->grid[1] = gy; l->grid[2] = gz;
  l->block[0] = bx; l->block[1] = by; l->block[2] = bz;
  l->shared = shared;
  l->programmatic = 0;
  l->nparams = fn->nparams < MAX_PARAMS ? fn->nparams : MAX_PARAMS;
  for (int i = 0; i < l->nparams; ++i)
    memcpy(&l->params[i], params[i], 8);
  return 0;
}
/* cuLaunchKernelEx: recorded as cuLaunchKernel, with whether attribute 6
   (CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION) was set to 1; any
   other attribute is refused. */
struct launch_attribute {
  int id;
  char pad[4];
  union { int value; char bytes[64]; } v;
};
struct launch_config {
  unsigned gx, gy, gz, bx, by, bz, shared;
  void *stream;
  struct launch_attribute *attrs;
  unsigned nattrs;
};
CUresult cuLaunchKernelEx(const struct launch_config *c, void *f, void **params,
                          void **extra) {
  int programmatic = 0;
  for (unsigned a = 0; a < c->nattrs; ++a) {
    if (c->attrs[a].id != 6)
      return 1;
    programmatic = c->attrs[a].v.value == 1;
  }
  CUresult r = cuLaunchKernel(f, c->gx, c->gy, c->gz, c->bx, c->by, c->bz,
                              c->shared, c->stream, params, extra);
  if (r == 0)
    launches[nlaunches - 1].programmatic = programmatic;
  return r;
}
CUresult cuStreamCreate(void **s, unsigned f) { (void)f; *s = malloc(1); ++live_objects; return 0; }
CUresult cuStreamDestroy_v2(void *s) { free(s); --live_objects; return 0; }
CUresult cuStreamSynchronize(void *s) { (void)s; return 0; }
CUresult cuStreamWaitEvent(void *s, void *e, unsigned f) { (void)s; (void)e; (void)f; return 0; }
CUresult cuEventCreate(void **e, unsigned f) { (void)f; *e = malloc(1); ++live_objects; return 0; }
CUresult cuEventDestroy_v2(void *e) { free(e); --live_objects; return 0; }
CUresult cuEventRecord(void *e, void *s) { (void)e; (void)s; return 0; }
CUresult cuEventSynchronize(void *e) { (void)e; return 0; }
CUresult cuEventElapsedTime(float *ms, void *a, void *b) { (void)a; (void)b; *ms = 0; return 0; }
CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n) { *p = (CUdeviceptr)calloc(1, n ? n : 1); ++live_objects; return 0; }
CUresult cuMemFree_v2(CUdeviceptr p) { free((void *)p); --live_objects; return 0; }
CUresult cuMemAllocManaged(CUdeviceptr *p, size_t n, unsigned f) { (void)f; return cuMemAlloc_v2(p, n); }
CUresult cuMemAllocHost_v2(void **p, size_t n) { *p = calloc(1, n ? n : 1); ++live_objects; return 0; }
CUresult cuMemFreeHost(void *p) { free(p); --live_objects; return 0; }
CUresult cuMemcpy(CUdeviceptr d, CUdeviceptr s, size_t n) { memcpy((void *)d, (void *)s, n); return 0; }
CUresult cuMemcpyAsync(CUdeviceptr d, CUdeviceptr s, size_t n, void *st) { (void)st; return cuMemcpy(d, s, n); }
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr d, const void *s, size_t n, void *st) {
  (void)st;
  memcpy((void *)d, s, n);
  return 0;
}
CUresult cuMemcpyDtoHAsync_v2(void *d, CUdeviceptr s, size_t n, void *st) {
  (void)st;
  memcpy(d, (void *)s, n);
  return 0;
}
CUresult cuMemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, void *s) { (void)s; memset((void *)d, v, n); return 0; }
CUresult cuMemsetD16Async(CUdeviceptr d, unsigned short v, size_t n, void *s) {
  (void)s;
  for (size_t i = 0; i < n; ++i) ((unsigned short *)d)[i] = v;
  return 0;
}
CUresult cuMemsetD32Async(CUdeviceptr d, unsigned v, size_t n, void *s) {
  (void)s;
  for (size_t i = 0; i < n; ++i) ((unsigned *)d)[i] = v;
  return 0;
}
/* Streams under capture (the runtime asks before launching a graph). */
static void *capturing;
CUresult cuStreamBeginCapture_v2(void *s, int m) { (void)m; capturing = s; return 0; }
CUresult cuStreamIsCapturing(void *s, int *status) {
  *status = capturing && capturing == s;
  return 0;
}

#define MAX_NODES 64
struct graph {
  int nnodes;
  struct launch nodes[MAX_NODES];
};
static int ngraph_launches;
struct kernel_node_params {
  void *func;
  unsigned gx, gy, gz, bx, by, bz, shared;
  void **params;
  void **extra;
  void *kern, *ctx;
};
static void record(struct launch *l, const struct kernel_node_params *p) {
  struct fn *fn = p->func;
  snprintf(l->name, sizeof l->name, "%s", fn->name);
  l->grid[0] = p->gx; l->grid[1] = p->gy; l->grid[2] = p->gz;
  l->block[0] = p->bx; l->block[1] = p->by; l->block[2] = p->bz;
  l->shared = p->shared;
  l->nparams = fn->nparams < MAX_PARAMS ? fn->nparams : MAX_PARAMS;
  for (int i = 0; i < l->nparams; ++i)
    memcpy(&l->params[i], p->params[i], 8);
}
CUresult cuStreamEndCapture(void *s, void **g) {
  (void)s;
  capturing = NULL;
  *g = calloc(1, sizeof(struct graph));
  ++live_objects;
  return 0;
}
/* The dependencies of the nodes of the last graph built (node handles are
   1 + the node's index in creation order). */
#define MAX_DEPS 8
static int last_graph_deps[MAX_NODES][MAX_DEPS + 1]; /* count, then ids */
/* Whether dependency k of a node is a programmatic edge (from the kernel
   node's programmatic port: cuGraphAddDependencies_v2). */
static int last_graph_dep_programmatic[MAX_NODES][MAX_DEPS];
/* The priority attribute of each node of the last graph built (NO_PRIORITY
   where none was set), and the flags it was instantiated with. The context's
   priorities range from 0 (least) to -5 (greatest), as on the H200; a
   stream's priority is 0. */
#define NO_PRIORITY 99
static int last_graph_priority[MAX_NODES];
static unsigned long long last_graph_flags;
CUresult cuGraphCreate(void **g, unsigned f) {
  (void)f;
  *g = calloc(1, sizeof(struct graph));
  ++live_objects;
  for (int i = 0; i < MAX_NODES; ++i) last_graph_priority[i] = NO_PRIORITY;
  return 0;
}
CUresult cuCtxGetStreamPriorityRange(int *least, int *greatest) {
  *least = 0;
  *greatest = -5;
  return 0;
}
CUresult cuStreamGetPriority(void *s, int *p) { (void)s; *p = 0; return 0; }
/* Attribute 8 (CU_LAUNCH_ATTRIBUTE_PRIORITY) only; the value's first int. */
CUresult cuGraphKernelNodeSetAttribute(void *node, int attr, const int *value) {
  intptr_t i = (intptr_t)node - 1;
  if (attr != 8 || i < 0 || i >= MAX_NODES || *value < -5 || *value > 0)
    return 1;
  last_graph_priority[i] = *value;
  return 0;
}
CUresult cuGraphAddKernelNode_v2(void **node, void *g, void **deps, size_t ndeps,
                                 const struct kernel_node_params *p) {
  struct graph *gr = g;
  if (gr->nnodes == MAX_NODES || ndeps > MAX_DEPS)
    return 1;
  last_graph_deps[gr->nnodes][0] = (int)ndeps;
  for (size_t d = 0; d < MAX_DEPS; ++d)
    last_graph_dep_programmatic[gr->nnodes][d] = 0;
  for (size_t d = 0; d < ndeps; ++d) {
    intptr_t id = (intptr_t)deps[d] - 1;
    if (id < 0 || id >= gr->nnodes)
      return 1; /* a dependency on a node not in this graph (yet) */
    last_graph_deps[gr->nnodes][d + 1] = (int)id;
  }
  record(&gr->nodes[gr->nnodes], p);
  *node = (void *)(intptr_t)(gr->nnodes + 1);
  ++gr->nnodes;
  return 0;
}
/* Edges added after their nodes: type 1 (programmatic) only from port 1 (the
   kernel node's programmatic port), to port 0. */
struct edge_data {
  unsigned char from_port, to_port, type, reserved[5];
};
CUresult cuGraphAddDependencies_v2(void *g, void **from, void **to,
                                   const struct edge_data *edges, size_t n) {
  struct graph *gr = g;
  for (size_t e = 0; e < n; ++e) {
    intptr_t a = (intptr_t)from[e] - 1, b = (intptr_t)to[e] - 1;
    if (a < 0 || b < 0 || a >= gr->nnodes || b >= gr->nnodes || a == b)
      return 1;
    int k = last_graph_deps[b][0];
    if (k == MAX_DEPS || edges[e].to_port != 0 ||
        (edges[e].type == 1) != (edges[e].from_port == 1) || edges[e].type > 1)
      return 1;
    last_graph_deps[b][k + 1] = (int)a;
    last_graph_dep_programmatic[b][k] = edges[e].type == 1;
    last_graph_deps[b][0] = k + 1;
  }
  return 0;
}
CUresult cuGraphInstantiateWithFlags(void **e, void *g, unsigned long long f) {
  last_graph_flags = f;
  struct graph *exec = malloc(sizeof *exec);
  memcpy(exec, g, sizeof *exec);
  *e = exec;
  ++live_objects;
  return 0;
}
CUresult cuGraphExecKernelNodeSetParams_v2(void *e, void *node,
                                           const struct kernel_node_params *p) {
  struct graph *exec = e;
  intptr_t i = (intptr_t)node - 1;
  if (i < 0 || i >= exec->nnodes)
    return 1;
  record(&exec->nodes[i], p);
  return 0;
}
CUresult cuGraphLaunch(void *e, void *s) {
  (void)s;
  struct graph *exec = e;
  for (int i = 0; i < exec->nnodes; ++i) {
    if (nlaunches == MAX_LAUNCHES)
      return 1;
    launches[nlaunches++] = exec->nodes[i];
  }
  ++ngraph_launches;
  return 0;
}
CUresult cuGraphExecDestroy(void *e) { free(e); --live_objects; return 0; }
CUresult cuGraphDestroy(void *g) { free(g); --live_objects; return 0; }

/* For the tests (ctypes). */
/* cuTensorMapEncodeTiled: the arguments of every call are recorded (the
 * arrays up to the rank), the 128-byte map is filled with 0xA5 and
 * CUDA_ERROR_INVALID_VALUE (1) is returned for a rank outside 1..5. */
struct tensor_map_call {
  int dtype, interleave, swizzle, l2, oob;
  unsigned rank;
  uint64_t address, dims[5], strides[4];
  unsigned box[5], estrides[5];
  void *map;
};
#define MAX_TENSOR_MAPS 64
static struct tensor_map_call tensor_maps[MAX_TENSOR_MAPS];
static int ntensor_maps;
CUresult cuTensorMapEncodeTiled(void *map, int dtype, unsigned rank, void *address,
                                const uint64_t *dims, const uint64_t *strides,
                                const unsigned *box, const unsigned *estrides,
                                int interleave, int swizzle, int l2, int oob) {
  if (ntensor_maps == MAX_TENSOR_MAPS)
    return 1;
  struct tensor_map_call *c = &tensor_maps[ntensor_maps++];
  memset(c, 0, sizeof *c);
  c->dtype = dtype; c->rank = rank; c->address = (uint64_t)(uintptr_t)address;
  c->interleave = interleave; c->swizzle = swizzle; c->l2 = l2; c->oob = oob;
  c->map = map;
  if (rank < 1 || rank > 5)
    return 1;
  for (unsigned i = 0; i < rank; ++i) {
    c->dims[i] = dims[i];
    c->box[i] = box[i];
    c->estrides[i] = estrides[i];
    if (i + 1 < rank)
      c->strides[i] = strides[i];
  }
  memset(map, 0xA5, 128);
  return 0;
}

int fake_cuda_num_launches(void) { return nlaunches; }
void fake_cuda_reset(void) { nlaunches = 0; ngraph_launches = 0; ntensor_maps = 0; }
int fake_cuda_num_graph_launches(void) { return ngraph_launches; }
/* Dependency k of node `node` (creation order) of the last graph built, or
   -1; k = -1 gives the node's number of dependencies. */
int fake_cuda_graph_dep(int node, int k) {
  if (node < 0 || node >= MAX_NODES || k >= last_graph_deps[node][0])
    return -1;
  return k < 0 ? last_graph_deps[node][0] : last_graph_deps[node][k + 1];
}
/* Whether dependency k of node `node` of the last graph built is a
   programmatic edge (-1: no such dependency). */
int fake_cuda_graph_dep_programmatic(int node, int k) {
  if (node < 0 || node >= MAX_NODES || k < 0 || k >= last_graph_deps[node][0])
    return -1;
  return last_graph_dep_programmatic[node][k];
}
/* Whether launch i was a programmatic dependent launch. */
int fake_cuda_launch_programmatic(int i) { return launches[i].programmatic; }
/* The priority of node `node` (creation order) of the last graph built
   (99: none set), and that graph's instantiation flags. */
int fake_cuda_graph_priority(int node) {
  return node < 0 || node >= MAX_NODES ? NO_PRIORITY : last_graph_priority[node];
}
unsigned long long fake_cuda_graph_flags(void) { return last_graph_flags; }
const char *fake_cuda_launch_name(int i) { return launches[i].name; }
int fake_cuda_launch_nparams(int i) { return launches[i].nparams; }
uint64_t fake_cuda_launch_param(int i, int p) { return launches[i].params[p]; }
unsigned fake_cuda_launch_grid(int i, int d) { return launches[i].grid[d]; }
/* Memory, streams, events, graphs and graph executables alive now. */
long fake_cuda_live_objects(void) { return live_objects; }
int fake_cuda_num_tensor_maps(void) { return ntensor_maps; }
/* Argument `field` of tensor-map call `i`: "dtype", "rank", "address",
 * "interleave", "swizzle", "l2", "oob", "map" (the output pointer), or
 * element `j` of "dims", "strides", "box", "estrides". */
uint64_t fake_cuda_tensor_map_arg(int i, const char *field, int j) {
  const struct tensor_map_call *c = &tensor_maps[i];
  if (!strcmp(field, "dtype")) return (uint64_t)c->dtype;
  if (!strcmp(field, "rank")) return c->rank;
  if (!strcmp(field, "address")) return c->address;
  if (!strcmp(field, "interleave")) return (uint64_t)c->interleave;
  if (!strcmp(field, "swizzle")) return (uint64_t)c->swizzle;
  if (!strcmp(field, "l2")) return (uint64_t)c->l2;
  if (!strcmp(field, "oob")) return (uint64_t)c->oob;
  if (!strcmp(field, "map")) return (uint64_t)(uintptr_t)c->map;
  if (!strcmp(field, "dims")) return c->dims[j];
  if (!strcmp(field, "strides")) return c->strides[j];
  if (!strcmp(field, "box")) return c->box[j];
  if (!strcmp(field, "estrides")) return c->estrides[j];
  return ~0ull;
}
