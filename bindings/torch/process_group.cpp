// gcoll as a torch.distributed backend: a c10d::ProcessGroup whose operations are gcoll's
// nonblocking calls on a communicator built through the c10d store it is handed. C++ only
// because torch's ProcessGroup is a C++ class; everything it does goes through gcoll's C ABI.
// gcoll/torch.py loads this module and registers "gcoll" with torch.distributed.
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstring>
#include <deque>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <pybind11/chrono.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/csrc/utils/pybind.h>

#include "gcoll.h"

namespace {

using c10d::OpType;
using Tensors = std::vector<at::Tensor>;

// How long the completion thread leaves a new work whose future nobody asked for to a caller
// that may block in wait() on it: waking more often would take the core from ranks that spin.
constexpr std::chrono::milliseconds kCallerFirst(2);

// How often the completion thread looks at the requests of the works it took.
constexpr std::chrono::microseconds kPoll(50);

// The priority that gcoll.torch.priority() gives this thread's operations, while set.
thread_local bool tl_priority_set = false;
thread_local int tl_priority = 0;

struct Queue;

[[noreturn]] void fail(const std::string &what, gcoll_status_t st)
{
    TORCH_CHECK(false, "gcoll: ", what, " failed: ", gcoll_status_name(st), ": ", gcoll_last_error());
}

void ok(gcoll_status_t st, const std::string &what)
{
    if (st != GCOLL_SUCCESS)
        fail(what, st);
}

// The gcoll type of a tensor's elements; reductions refuse bool, movement takes it as bytes.
gcoll_dtype_t dtype_of(const at::Tensor &t, bool reduction, const char *op)
{
    switch (t.scalar_type()) {
    case at::kFloat: return GCOLL_FLOAT32;
    case at::kDouble: return GCOLL_FLOAT64;
    case at::kHalf: return GCOLL_FLOAT16;
    case at::kBFloat16: return GCOLL_BFLOAT16;
    case at::kChar: return GCOLL_INT8;
    case at::kByte: return GCOLL_UINT8;
    case at::kShort: return GCOLL_INT16;
    case at::kInt: return GCOLL_INT32;
    case at::kLong: return GCOLL_INT64;
    case at::kBool:
        if (!reduction)
            return GCOLL_UINT8;
        break;
    default: break;
    }
    TORCH_CHECK(false, "gcoll: ", op, " of a ", t.scalar_type(), " tensor: gcoll has no such type",
                reduction ? " for reductions" : "", " (it serves float32/64, float16, bfloat16, int8/16/32/64, uint8",
                reduction ? "" : ", bool", ")");
}

void check_tensor(const at::Tensor &t, const char *op)
{
    TORCH_CHECK(t.device().is_cpu(), "gcoll: ", op, ": a tensor on ", t.device(), ": this backend serves CPU tensors");
    TORCH_CHECK(t.layout() == at::kStrided, "gcoll: ", op, ": sparse tensors are not served");
}

void check_one(const Tensors &ts, const char *op)
{
    TORCH_CHECK(ts.size() == 1, "gcoll: ", op, " takes one tensor per process, got ", ts.size());
    check_tensor(ts[0], op);
}

struct Op {
    gcoll_op_t op;
    double premul;
};

Op op_of(const c10d::ReduceOp &r, const at::Tensor &t, const char *what)
{
    switch (r.op_) {
    case c10d::ReduceOp::SUM: return {GCOLL_SUM, 0};
    case c10d::ReduceOp::AVG: return {GCOLL_AVG, 0};
    case c10d::ReduceOp::PRODUCT: return {GCOLL_PROD, 0};
    case c10d::ReduceOp::MIN: return {GCOLL_MIN, 0};
    case c10d::ReduceOp::MAX: return {GCOLL_MAX, 0};
    case c10d::ReduceOp::PREMUL_SUM: {
        TORCH_CHECK(at::isFloatingType(t.scalar_type()), "gcoll: ", what,
                    " with PREMUL_SUM needs a floating-point tensor, not ", t.scalar_type());
        auto *s = dynamic_cast<c10d::NCCLPreMulSumSupplement *>(r.supplement_.get());
        TORCH_CHECK(s, "gcoll: ", what, ": PREMUL_SUM without its factor");
        if (s->tensor_factors.empty())
            return {GCOLL_PREMUL_SUM, s->double_factor};
        TORCH_CHECK(s->tensor_factors.size() == 1, "gcoll: ", what, ": PREMUL_SUM takes one factor");
        return {GCOLL_PREMUL_SUM, s->tensor_factors[0].item<double>()};
    }
    default: break;
    }
    TORCH_CHECK(false, "gcoll: ", what, " with the bitwise ReduceOp ", int(r.op_),
                ": gcoll reduces with SUM, AVG, PRODUCT, MIN, MAX and PREMUL_SUM");
}

// A contiguous tensor that holds t's elements: t itself, or a copy whose result the work copies
// back into t once it completes.
at::Tensor dense(const at::Tensor &t)
{
    return t.is_contiguous() ? t : t.contiguous();
}

// Whether the memory of a and b overlaps: an output that is a view of the input (torch's
// in-place all_gather_into_tensor and reduce_scatter_tensor) is then written through a copy.
bool overlaps(const at::Tensor &a, const at::Tensor &b)
{
    if (!a.numel() || !b.numel())
        return false;
    const char *a0 = static_cast<const char *>(a.data_ptr()), *b0 = static_cast<const char *>(b.data_ptr());
    return a0 < b0 + b.nbytes() && b0 < a0 + a.nbytes();
}

// The contiguous tensor gcoll writes an output into: out itself, unless out is not contiguous
// or overlaps in (then a fresh one, copied into out once the work completes).
at::Tensor output_for(const at::Tensor &out, const at::Tensor &in)
{
    return out.is_contiguous() && !overlaps(out, in) ? out : at::empty_like(out, at::MemoryFormat::Contiguous);
}

size_t count_of(const at::Tensor &t)
{
    return size_t(t.numel());
}

void *ptr(const at::Tensor &t)
{
    return t.data_ptr();
}

// One torch operation: the gcoll requests it started, the tensors they use, and what is left to
// do once they are complete (copies into the caller's tensors).
class WorkGcoll : public c10d::Work {
  public:
    WorkGcoll(int rank, OpType type, const char *name, Tensors outputs, std::shared_ptr<Queue> queue)
        : c10d::Work(rank, type), name_(name), outputs_(std::move(outputs)),
          future_(c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()))),
          queue_(std::move(queue))
    {
        attr.name = name_.c_str();
        if (tl_priority_set)
            attr.priority = tl_priority;
    }
    ~WorkGcoll() override
    {
        uncount(); // a work refused before it started
    }

    // Whoever asks for the future (DDP) waits on it, not on the work: the completion thread
    // takes the work at once.
    c10::intrusive_ptr<c10::ivalue::Future> getFuture() override
    {
        if (!wanted_.exchange(true))
            wake();
        return future_;
    }
    std::vector<at::Tensor> result() override
    {
        return outputs_;
    }

    // A caller that blocks in wait() completes the work itself when no thread has taken it yet,
    // as a blocking call on gcoll would: no hand-over between threads on the way back. So does
    // the completion thread when a future's callback it runs waits for a work it took: it would
    // wait for itself.
    bool wait(std::chrono::milliseconds timeout) override
    {
        if (timeout == kNoTimeout && (take() || by_completer())) {
            complete();
            unqueue();
        }
        return c10d::Work::wait(timeout);
    }

    // Whether this thread is the one that completes the work (the first to ask).
    bool take()
    {
        bool no = false;
        return taken_.compare_exchange_strong(no, true);
    }
    bool taken() const
    {
        return taken_;
    }
    bool wanted() const
    {
        return wanted_;
    }
    bool concluded() const
    {
        return concluded_;
    }

    std::vector<gcoll_request_t> reqs;
    gcoll_attr_t attr = GCOLL_ATTR_INIT;     // its name and priority, for every request it posts
    Tensors keep;                            // buffers the requests use, alive until they complete
    std::vector<std::shared_ptr<void>> hold; // and the count arrays they read
    std::function<void()> after;             // runs once every request succeeded
    std::string name_;
    const std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();

    // A gradient reduction counts among the process group's in flight until it completes.
    void count()
    {
        counted_ = true;
    }

    // Waits for every request, then completes the work and its future: for a caller that blocks
    // in wait() and took the work.
    void complete()
    {
        for (auto &r : reqs)
            if (r)
                note(gcoll_wait(&r));
        conclude();
    }

    // Tests each request still running, without blocking: true once all are complete, failures
    // noted. For the completion thread, which looks at every work it took in turn, so that a
    // work completes when its own requests do (a late, urgent one before those started earlier).
    bool poll()
    {
        bool all = true;
        for (auto &r : reqs) {
            if (!r)
                continue;
            int done = 0;
            gcoll_status_t st = gcoll_test(&r, &done);
            if (!done) // running, or held by a gcoll group its caller has not ended (refused till then)
                all = false;
            else // gcoll_test has freed it and returned the operation's status
                note(st);
        }
        return all;
    }

    // Completes the work and its future once every request is complete; the first call does.
    void conclude()
    {
        if (concluded_.exchange(true))
            return;
        if (!err && after) {
            try {
                after();
            } catch (...) {
                err = std::current_exception();
            }
        }
        keep.clear();
        hold.clear();
        uncount();
        if (err)
            future_->setError(err);
        else
            future_->markCompleted(c10::IValue(outputs_));
        finish(err);
    }

  private:
    void wake();
    void unqueue();
    void uncount();
    bool by_completer() const;

    void note(gcoll_status_t st)
    {
        if (st != GCOLL_SUCCESS && !err)
            err = std::make_exception_ptr(std::runtime_error(
                std::string("gcoll: ") + name_ + " failed: " + gcoll_status_name(st) + ": " + gcoll_last_error()));
    }

    std::exception_ptr err;
    std::atomic<bool> counted_{false}, concluded_{false};
    Tensors outputs_;
    c10::intrusive_ptr<c10::ivalue::Future> future_;
    std::shared_ptr<Queue> queue_;
    std::atomic<bool> taken_{false}, wanted_{false};
};

// The works a process group started and the completion thread has not taken yet, in order;
// and its gradient reductions in flight, for their priorities.
struct Queue {
    std::mutex lock;
    std::condition_variable cv;
    std::deque<c10::intrusive_ptr<WorkGcoll>> works;
    bool stop = false;
    bool idle = false;         // the completion thread sleeps until a work comes: enqueue wakes it
    int reductions = 0;        // gradient reductions started and not complete
    int last_priority = 0;     // the priority the newest of them got
    std::thread::id completer; // the completion thread, set before any work is queued
};

void WorkGcoll::wake()
{
    std::lock_guard<std::mutex> g(queue_->lock);
    queue_->cv.notify_all();
}

bool WorkGcoll::by_completer() const
{
    return std::this_thread::get_id() == queue_->completer && !concluded_;
}

void WorkGcoll::uncount()
{
    if (!counted_.exchange(false))
        return;
    std::lock_guard<std::mutex> g(queue_->lock);
    queue_->reductions--;
}

// A work its caller completed leaves the queue at once: the completion thread never holds the
// last reference to its tensors, whose release may need the Python interpreter.
void WorkGcoll::unqueue()
{
    std::lock_guard<std::mutex> g(queue_->lock);
    auto &ws = queue_->works;
    for (auto it = ws.begin(); it != ws.end(); ++it)
        if (it->get() == this) {
            ws.erase(it);
            break;
        }
}

// set and get of gcoll_store_t over a c10d store; the store's exceptions become a status and why.
gcoll_status_t store_set(void *ctx, const char *key, const void *value, size_t len, char *why, size_t whylen)
{
    try {
        const uint8_t *v = static_cast<const uint8_t *>(value);
        static_cast<c10d::Store *>(ctx)->set(key, std::vector<uint8_t>(v, v + len));
        return GCOLL_SUCCESS;
    } catch (const std::exception &e) {
        snprintf(why, whylen, "%s", e.what());
        return GCOLL_ERR_SYSTEM;
    }
}

gcoll_status_t store_get(void *ctx, const char *key, void *value, size_t cap, size_t *len, char *why, size_t whylen)
{
    try {
        std::vector<uint8_t> v = static_cast<c10d::Store *>(ctx)->get(key);
        *len = v.size();
        memcpy(value, v.data(), v.size() < cap ? v.size() : cap);
        return GCOLL_SUCCESS;
    } catch (const std::exception &e) {
        snprintf(why, whylen, "%s", e.what());
        return strstr(e.what(), "imeout") || strstr(e.what(), "timed out") ? GCOLL_ERR_TIMEOUT : GCOLL_ERR_SYSTEM;
    }
}

class ProcessGroupGcoll : public c10d::ProcessGroup {
  public:
    ProcessGroupGcoll(const c10::intrusive_ptr<c10d::Store> &store, int rank, int size, double timeout_s)
        : c10d::ProcessGroup(rank, size), store_(store)
    {
        gcoll_store_t s = GCOLL_STORE_INIT;
        s.ctx = store_.get();
        s.set = store_set;
        s.get = store_get;
        gcoll_comm_t world;
        bool first = gcoll_comm_world(&world) != GCOLL_SUCCESS;
        ok(gcoll_init_store(rank, size, &s), "gcoll_init_store");
        gcoll_status_t st = first ? gcoll_comm_world(&comm_) : gcoll_comm_create_store(rank, size, &s, &comm_);
        if (st == GCOLL_SUCCESS && first) {
            // the world is gcoll_finalize's to free; this group uses a communicator of its own
            gcoll_comm_t own;
            st = gcoll_comm_dup(comm_, &own);
            comm_ = own;
        }
        if (st == GCOLL_SUCCESS)
            st = gcoll_comm_set_timeout(comm_, timeout_s);
        if (st != GCOLL_SUCCESS) {
            std::string msg = gcoll_last_error();
            if (comm_)
                gcoll_comm_free(&comm_);
            gcoll_finalize();
            TORCH_CHECK(false, "gcoll: the process group's communicator: ", gcoll_status_name(st), ": ", msg);
        }
        completer_ = std::thread([this] { run(); });
        queue_->completer = completer_.get_id();
    }

    ~ProcessGroupGcoll() override
    {
        {
            std::lock_guard<std::mutex> g(queue_->lock);
            queue_->stop = true;
        }
        queue_->cv.notify_all();
        completer_.join();
        gcoll_comm_free(&comm_);
        gcoll_finalize();
    }

    const std::string getBackendName() const override
    {
        return "gcoll";
    }

    c10::intrusive_ptr<c10d::Work> broadcast(Tensors &tensors, const c10d::BroadcastOptions &opts) override
    {
        check_one(tensors, "broadcast");
        at::Tensor t = tensors[0], buf = dense(t);
        auto w = work(OpType::BROADCAST, "broadcast", tensors);
        start(w, "broadcast", [&](gcoll_request_t *r) {
            return gcoll_ibcast(ptr(buf), count_of(buf), dtype_of(buf, false, "broadcast"), int(opts.rootRank), comm_,
                                &w->attr, r);
        });
        return launch(w, buf, t);
    }

    c10::intrusive_ptr<c10d::Work> allreduce(Tensors &tensors, const c10d::AllreduceOptions &opts) override
    {
        check_one(tensors, "allreduce");
        at::Tensor t = tensors[0], buf = dense(t);
        auto w = work(OpType::ALLREDUCE, "allreduce", tensors);
        reduction(w);
        post_allreduce(w, buf, opts.reduceOp);
        return launch(w, buf, t);
    }

    c10::intrusive_ptr<c10d::Work> allreduce_coalesced(Tensors &tensors,
                                                       const c10d::AllreduceCoalescedOptions &opts) override
    {
        auto w = work(OpType::ALLREDUCE_COALESCED, "allreduce_coalesced", tensors);
        reduction(w);
        Tensors bufs;
        for (auto &t : tensors) {
            check_tensor(t, "allreduce_coalesced");
            bufs.push_back(dense(t));
        }
        ok(gcoll_group_start(), "gcoll_group_start");
        try {
            for (auto &b : bufs)
                post_allreduce(w, b, opts.reduceOp);
        } catch (...) {
            gcoll_group_end();
            abandon(w);
            throw;
        }
        ok(gcoll_group_end(), "allreduce_coalesced");
        copy_back(w, bufs, tensors);
        return enqueue(w);
    }

    c10::intrusive_ptr<c10d::Work> reduce(Tensors &tensors, const c10d::ReduceOptions &opts) override
    {
        check_one(tensors, "reduce");
        at::Tensor t = tensors[0], buf = dense(t);
        Op o = op_of(opts.reduceOp, buf, "reduce");
        auto w = work(OpType::REDUCE, "reduce", tensors);
        gcoll_attr_t a = attr(w, o);
        start(w, "reduce", [&](gcoll_request_t *r) {
            return gcoll_ireduce(ptr(buf), ptr(buf), count_of(buf), dtype_of(buf, true, "reduce"), o.op,
                                 int(opts.rootRank), comm_, &a, r);
        });
        return launch(w, buf, t);
    }

    c10::intrusive_ptr<c10d::Work> allgather(std::vector<Tensors> &outputs, Tensors &inputs,
                                             const c10d::AllgatherOptions &) override
    {
        check_one(inputs, "allgather");
        TORCH_CHECK(outputs.size() == 1, "gcoll: allgather takes one output list per process");
        check_list(outputs[0], inputs[0], "allgather");
        at::Tensor in = dense(inputs[0]);
        at::Tensor flat = at::empty({int64_t(size_) * in.numel()}, in.options());
        auto w = work(OpType::ALLGATHER, "allgather", outputs[0]);
        w->keep = {in, flat};
        start(w, "allgather", [&](gcoll_request_t *r) {
            return gcoll_iallgather(ptr(in), ptr(flat), count_of(in), dtype_of(in, false, "allgather"), comm_, &w->attr,
                                    r);
        });
        Tensors outs = outputs[0];
        w->after = [flat, outs]() { unflatten(flat, outs); };
        return enqueue(w);
    }

    c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor &output, at::Tensor &input,
                                                   const c10d::AllgatherOptions &) override
    {
        check_tensor(input, "_allgather_base");
        check_tensor(output, "_allgather_base");
        TORCH_CHECK(output.numel() == int64_t(size_) * input.numel(), "gcoll: _allgather_base: the output holds ",
                    output.numel(), " elements, not the group's ", size_, " x ", input.numel());
        TORCH_CHECK(output.scalar_type() == input.scalar_type(), "gcoll: _allgather_base: the output's type ",
                    output.scalar_type(), " is not the input's ", input.scalar_type());
        at::Tensor in = dense(input), out = output_for(output, in);
        Tensors outputs = {output};
        auto w = work(OpType::_ALLGATHER_BASE, "_allgather_base", outputs);
        w->keep = {in};
        start(w, "_allgather_base", [&](gcoll_request_t *r) {
            return gcoll_iallgather(ptr(in), ptr(out), count_of(in), dtype_of(in, false, "_allgather_base"), comm_,
                                    &w->attr, r);
        });
        return launch(w, out, output);
    }

    c10::intrusive_ptr<c10d::Work> allgather_coalesced(std::vector<Tensors> &outputs, Tensors &inputs,
                                                       const c10d::AllgatherOptions &) override
    {
        TORCH_CHECK(outputs.size() == size_t(size_), "gcoll: allgather_coalesced takes one output list per rank (",
                    size_, "), got ", outputs.size());
        for (auto &t : inputs)
            check_tensor(t, "allgather_coalesced");
        for (auto &list : outputs) {
            TORCH_CHECK(list.size() == inputs.size(), "gcoll: allgather_coalesced: an output list of ", list.size(),
                        " tensors for ", inputs.size(), " inputs");
            for (size_t i = 0; i < list.size(); i++)
                same_shape(list[i], inputs[i], "allgather_coalesced");
        }
        at::Tensor in = inputs.empty() ? at::empty({0}, at::kByte) : flatten(inputs, "allgather_coalesced");
        at::Tensor flat = at::empty({int64_t(size_) * in.numel()}, in.options());
        Tensors all;
        for (auto &list : outputs)
            all.insert(all.end(), list.begin(), list.end());
        auto w = work(OpType::ALLGATHER_COALESCED, "allgather_coalesced", all);
        w->keep = {in, flat};
        start(w, "allgather_coalesced", [&](gcoll_request_t *r) {
            return gcoll_iallgather(ptr(in), ptr(flat), count_of(in), dtype_of(in, false, "allgather_coalesced"), comm_,
                                    &w->attr, r);
        });
        w->after = [flat, all]() { unflatten(flat, all); };
        return enqueue(w);
    }

    c10::intrusive_ptr<c10d::Work> gather(std::vector<Tensors> &outputs, Tensors &inputs,
                                          const c10d::GatherOptions &opts) override
    {
        check_one(inputs, "gather");
        int root = int(opts.rootRank);
        check_root(root, "gather");
        bool me = root == rank_;
        TORCH_CHECK(me ? outputs.size() == 1 : outputs.empty() || (outputs.size() == 1 && outputs[0].empty()),
                    "gcoll: gather: ", me ? "the root takes one output list" : "only the root takes outputs");
        if (me)
            check_list(outputs[0], inputs[0], "gather");
        at::Tensor in = dense(inputs[0]);
        at::Tensor flat = me ? at::empty({int64_t(size_) * in.numel()}, in.options()) : in;
        Tensors outs = me ? outputs[0] : Tensors{};
        auto w = work(OpType::GATHER, "gather", outs);
        w->keep = {in, flat};
        start(w, "gather", [&](gcoll_request_t *r) {
            return gcoll_igather(ptr(in), me ? ptr(flat) : nullptr, count_of(in), dtype_of(in, false, "gather"), root,
                                 comm_, &w->attr, r);
        });
        if (me)
            w->after = [flat, outs]() { unflatten(flat, outs); };
        return enqueue(w);
    }

    c10::intrusive_ptr<c10d::Work> scatter(Tensors &outputs, std::vector<Tensors> &inputs,
                                           const c10d::ScatterOptions &opts) override
    {
        check_one(outputs, "scatter");
        int root = int(opts.rootRank);
        check_root(root, "scatter");
        bool me = root == rank_;
        TORCH_CHECK(me ? inputs.size() == 1 : inputs.empty() || (inputs.size() == 1 && inputs[0].empty()),
                    "gcoll: scatter: ", me ? "the root takes one input list" : "only the root takes inputs");
        if (me)
            check_list(inputs[0], outputs[0], "scatter");
        at::Tensor out = dense(outputs[0]);
        at::Tensor flat = me ? flatten(inputs[0], "scatter") : out;
        auto w = work(OpType::SCATTER, "scatter", outputs);
        w->keep = {flat};
        start(w, "scatter", [&](gcoll_request_t *r) {
            return gcoll_iscatter(me ? ptr(flat) : nullptr, ptr(out), count_of(out), dtype_of(out, false, "scatter"),
                                  root, comm_, &w->attr, r);
        });
        return launch(w, out, outputs[0]);
    }

    c10::intrusive_ptr<c10d::Work> reduce_scatter(Tensors &outputs, std::vector<Tensors> &inputs,
                                                  const c10d::ReduceScatterOptions &opts) override
    {
        check_one(outputs, "reduce_scatter");
        TORCH_CHECK(inputs.size() == 1 && inputs[0].size() == size_t(size_),
                    "gcoll: reduce_scatter takes one input list of one tensor per rank (", size_, ")");
        at::Tensor out = dense(outputs[0]);
        TORCH_CHECK(inputs[0][rank_].numel() == out.numel(), "gcoll: reduce_scatter: the output holds ", out.numel(),
                    " elements, this rank's input ", inputs[0][rank_].numel());
        for (auto &t : inputs[0])
            TORCH_CHECK(t.scalar_type() == out.scalar_type(), "gcoll: reduce_scatter: an input of type ",
                        t.scalar_type(), " for an output of ", out.scalar_type());
        at::Tensor flat = flatten(inputs[0], "reduce_scatter");
        Op o = op_of(opts.reduceOp, out, "reduce_scatter");
        auto counts = std::make_shared<std::vector<size_t>>();
        for (auto &t : inputs[0])
            counts->push_back(count_of(t));
        auto w = work(OpType::REDUCE_SCATTER, "reduce_scatter", outputs);
        reduction(w);
        w->keep = {flat};
        w->hold.push_back(counts);
        gcoll_attr_t a = attr(w, o);
        start(w, "reduce_scatter", [&](gcoll_request_t *r) {
            return gcoll_ireduce_scatterv(ptr(flat), ptr(out), counts->data(), dtype_of(out, true, "reduce_scatter"),
                                          o.op, comm_, &a, r);
        });
        return launch(w, out, outputs[0]);
    }

    c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(at::Tensor &output, at::Tensor &input,
                                                        const c10d::ReduceScatterOptions &opts) override
    {
        check_tensor(input, "_reduce_scatter_base");
        check_tensor(output, "_reduce_scatter_base");
        TORCH_CHECK(input.numel() == int64_t(size_) * output.numel(), "gcoll: _reduce_scatter_base: the input holds ",
                    input.numel(), " elements, not the group's ", size_, " x ", output.numel());
        TORCH_CHECK(output.scalar_type() == input.scalar_type(), "gcoll: _reduce_scatter_base: the output's type ",
                    output.scalar_type(), " is not the input's ", input.scalar_type());
        at::Tensor in = dense(input), out = output_for(output, in);
        Op o = op_of(opts.reduceOp, out, "_reduce_scatter_base");
        Tensors outputs = {output};
        auto w = work(OpType::_REDUCE_SCATTER_BASE, "_reduce_scatter_base", outputs);
        reduction(w);
        w->keep = {in};
        gcoll_attr_t a = attr(w, o);
        start(w, "_reduce_scatter_base", [&](gcoll_request_t *r) {
            return gcoll_ireduce_scatter(ptr(in), ptr(out), count_of(out), dtype_of(out, true, "_reduce_scatter_base"),
                                         o.op, comm_, &a, r);
        });
        return launch(w, out, output);
    }

    c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor &output, at::Tensor &input, std::vector<int64_t> &outSplits,
                                                 std::vector<int64_t> &inSplits, const c10d::AllToAllOptions &) override
    {
        check_tensor(input, "alltoall_base");
        check_tensor(output, "alltoall_base");
        TORCH_CHECK(output.scalar_type() == input.scalar_type(), "gcoll: alltoall_base: the output's type ",
                    output.scalar_type(), " is not the input's ", input.scalar_type());
        at::Tensor in = dense(input), out = output_for(output, in);
        Tensors outputs = {output};
        auto w = work(OpType::ALLTOALL_BASE, "alltoall_base", outputs);
        w->keep = {in};
        gcoll_dtype_t dt = dtype_of(in, false, "alltoall_base");
        if (outSplits.empty() && inSplits.empty()) {
            TORCH_CHECK(in.numel() % size_ == 0 && out.numel() == in.numel(), "gcoll: alltoall_base without splits: ",
                        "input and output must hold the same multiple of the group's size (", size_, "), not ",
                        in.numel(), " and ", out.numel());
            start(w, "alltoall_base", [&](gcoll_request_t *r) {
                return gcoll_ialltoall(ptr(in), ptr(out), count_of(in) / size_t(size_), dt, comm_, &w->attr, r);
            });
            return launch(w, out, output);
        }
        auto sc = std::make_shared<std::vector<size_t>>(), rc = std::make_shared<std::vector<size_t>>();
        splits(in, inSplits, "input", *sc);
        splits(out, outSplits, "output", *rc);
        w->hold = {sc, rc};
        start(w, "alltoall_base", [&](gcoll_request_t *r) {
            return gcoll_ialltoallv(ptr(in), sc->data(), nullptr, ptr(out), rc->data(), nullptr, dt, comm_, &w->attr,
                                    r);
        });
        return launch(w, out, output);
    }

    c10::intrusive_ptr<c10d::Work> alltoall(Tensors &outputs, Tensors &inputs, const c10d::AllToAllOptions &) override
    {
        TORCH_CHECK(outputs.size() == size_t(size_) && inputs.size() == size_t(size_),
                    "gcoll: alltoall takes one input and one output tensor per rank (", size_, ")");
        for (size_t i = 0; i < inputs.size(); i++)
            TORCH_CHECK(inputs[i].scalar_type() == inputs[0].scalar_type() &&
                            outputs[i].scalar_type() == inputs[0].scalar_type(),
                        "gcoll: alltoall: every tensor needs one type");
        at::Tensor in = flatten(inputs, "alltoall"), out = at::empty({total(outputs)}, in.options());
        auto sc = std::make_shared<std::vector<size_t>>(), rc = std::make_shared<std::vector<size_t>>();
        for (int r = 0; r < size_; r++) {
            sc->push_back(count_of(inputs[r]));
            rc->push_back(count_of(outputs[r]));
        }
        auto w = work(OpType::ALLTOALL, "alltoall", outputs);
        w->keep = {in, out};
        w->hold = {sc, rc};
        start(w, "alltoall", [&](gcoll_request_t *r) {
            return gcoll_ialltoallv(ptr(in), sc->data(), nullptr, ptr(out), rc->data(), nullptr,
                                    dtype_of(in, false, "alltoall"), comm_, &w->attr, r);
        });
        Tensors outs = outputs;
        w->after = [out, outs]() { unflatten(out, outs); };
        return enqueue(w);
    }

    c10::intrusive_ptr<c10d::Work> send(Tensors &tensors, int dst, int tag) override
    {
        check_one(tensors, "send");
        check_tag(tag, "send");
        check_root(dst, "send");
        at::Tensor buf = dense(tensors[0]);
        auto w = work(OpType::SEND, "send", tensors);
        w->keep = {buf};
        start(w, "send", [&](gcoll_request_t *r) {
            return gcoll_isend(ptr(buf), count_of(buf), dtype_of(buf, false, "send"), dst, comm_, &w->attr, r);
        });
        return enqueue(w);
    }

    c10::intrusive_ptr<c10d::Work> recv(Tensors &tensors, int src, int tag) override
    {
        check_one(tensors, "recv");
        check_tag(tag, "recv");
        check_root(src, "recv");
        at::Tensor t = tensors[0], buf = dense(t);
        auto w = work(OpType::RECV, "recv", tensors);
        start(w, "recv", [&](gcoll_request_t *r) {
            return gcoll_irecv(ptr(buf), count_of(buf), dtype_of(buf, false, "recv"), src, comm_, &w->attr, r);
        });
        return launch(w, buf, t);
    }

    c10::intrusive_ptr<c10d::Work> recvAnysource(Tensors &, int) override
    {
        TORCH_CHECK(false, "gcoll: recv from any source is not served: gcoll's point-to-point names its peer");
    }

    c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions &) override
    {
        auto w = work(OpType::BARRIER, "barrier", {});
        start(w, "barrier", [&](gcoll_request_t *r) { return gcoll_ibarrier(comm_, &w->attr, r); });
        return enqueue(w);
    }

    // The Adasum of one tensor per rank, each of counts' pieces its own gradient (gcoll_iadasum).
    c10::intrusive_ptr<c10d::Work> adasum(at::Tensor &tensor, const std::vector<int64_t> &counts)
    {
        check_tensor(tensor, "adasum");
        TORCH_CHECK(at::isFloatingType(tensor.scalar_type()), "gcoll: adasum of a ", tensor.scalar_type(),
                    " tensor: Adasum is for floating-point gradients");
        at::Tensor buf = dense(tensor);
        auto c = std::make_shared<std::vector<size_t>>(counts.begin(), counts.end());
        size_t sum = 0;
        for (size_t x : *c)
            sum += x;
        TORCH_CHECK(sum == count_of(buf), "gcoll: adasum: the pieces hold ", sum, " elements, the tensor ",
                    buf.numel());
        Tensors tensors = {tensor};
        auto w = work(OpType::ALLREDUCE, "adasum", tensors);
        reduction(w);
        w->hold.push_back(c);
        start(w, "adasum", [&](gcoll_request_t *r) {
            return gcoll_iadasum(ptr(buf), ptr(buf), count_of(buf), dtype_of(buf, true, "adasum"), c->data(), c->size(),
                                 comm_, &w->attr, r);
        });
        return launch(w, buf, tensor);
    }

    gcoll_comm_t comm() const
    {
        return comm_;
    }

    void set_bucket_priorities(bool on)
    {
        bucket_priorities_ = on;
    }
    bool bucket_priorities() const
    {
        return bucket_priorities_;
    }

  private:
    c10::intrusive_ptr<WorkGcoll> work(OpType type, const char *name, const Tensors &outputs)
    {
        return c10::make_intrusive<WorkGcoll>(rank_, type, name, outputs, queue_);
    }

    gcoll_attr_t attr(const c10::intrusive_ptr<WorkGcoll> &w, const Op &o)
    {
        gcoll_attr_t a = w->attr;
        a.premul = o.premul;
        return a;
    }

    // Bucket priorities: a gradient reduction started while others are in flight gets a priority
    // one above the newest of them, one started when none is gets 0. DDP starts its buckets last
    // layers first, so the first layers' gradients, which the next forward pass needs first,
    // overtake those started before them. A priority the caller set (gcoll.torch.priority) wins.
    void reduction(const c10::intrusive_ptr<WorkGcoll> &w)
    {
        if (tl_priority_set || !bucket_priorities_)
            return;
        std::lock_guard<std::mutex> g(queue_->lock);
        Queue &q = *queue_;
        // gcoll's priorities are ints: a group whose reductions never all complete stays at the top
        q.last_priority = !q.reductions ? 0 : q.last_priority < INT_MAX ? q.last_priority + 1 : INT_MAX;
        q.reductions++;
        w->attr.priority = q.last_priority;
        w->count();
    }

    void post_allreduce(const c10::intrusive_ptr<WorkGcoll> &w, const at::Tensor &buf, const c10d::ReduceOp &op)
    {
        Op o = op_of(op, buf, "allreduce");
        gcoll_dtype_t dt = dtype_of(buf, true, "allreduce");
        gcoll_attr_t a = attr(w, o);
        w->keep.push_back(buf);
        start(w, w->name_.c_str(), [&](gcoll_request_t *r) {
            return gcoll_iallreduce(ptr(buf), ptr(buf), count_of(buf), dt, o.op, comm_, &a, r);
        });
    }

    // Posts one gcoll request of w; a refusal ends the requests w posted before it, then throws.
    template <typename F> void start(const c10::intrusive_ptr<WorkGcoll> &w, const char *what, F post)
    {
        gcoll_request_t r = nullptr;
        gcoll_status_t st = post(&r);
        if (st != GCOLL_SUCCESS) {
            std::string msg = gcoll_last_error();
            abandon(w);
            TORCH_CHECK(false, "gcoll: ", what, " failed: ", gcoll_status_name(st), ": ", msg);
        }
        w->reqs.push_back(r);
    }

    void abandon(const c10::intrusive_ptr<WorkGcoll> &w)
    {
        for (auto &r : w->reqs)
            if (r)
                gcoll_wait(&r);
        w->reqs.clear();
    }

    // Results land in buf; when buf is a contiguous copy of t, they are copied into t after.
    c10::intrusive_ptr<c10d::Work> launch(const c10::intrusive_ptr<WorkGcoll> &w, const at::Tensor &buf,
                                          const at::Tensor &t)
    {
        copy_back(w, {buf}, {t});
        return enqueue(w);
    }

    static void copy_back(const c10::intrusive_ptr<WorkGcoll> &w, const Tensors &bufs, const Tensors &ts)
    {
        w->keep.insert(w->keep.end(), bufs.begin(), bufs.end());
        bool any = false;
        for (size_t i = 0; i < ts.size(); i++)
            any |= !bufs[i].is_same(ts[i]);
        if (!any)
            return;
        auto prev = w->after;
        w->after = [prev, bufs, ts]() {
            if (prev)
                prev();
            for (size_t i = 0; i < ts.size(); i++)
                if (!bufs[i].is_same(ts[i]))
                    const_cast<at::Tensor &>(ts[i]).copy_(bufs[i]);
        };
    }

    c10::intrusive_ptr<c10d::Work> enqueue(const c10::intrusive_ptr<WorkGcoll> &w)
    {
        bool idle;
        {
            std::lock_guard<std::mutex> g(queue_->lock);
            idle = queue_->idle;
            queue_->works.push_back(w);
        }
        if (idle) // else the completion thread, awake, comes to it within kCallerFirst
            queue_->cv.notify_all();
        return w;
    }

    // The completion thread: takes the works nobody waits for (DDP waits on their futures) and
    // completes each as soon as its requests are, whatever the order they were started in. It
    // leaves each alone for a moment first, so that a caller about to block in wait() takes its
    // own work and returns without a hand-over.
    void run()
    {
        Queue &q = *queue_;
        std::vector<c10::intrusive_ptr<WorkGcoll>> mine, done;
        std::unique_lock<std::mutex> g(q.lock);
        for (;;) {
            auto now = std::chrono::steady_clock::now();
            for (auto it = q.works.begin(); it != q.works.end();) {
                WorkGcoll &w = **it;
                if (w.taken()) { // by its caller, who completes it
                    it = q.works.erase(it);
                } else if ((w.wanted() || now >= w.started + kCallerFirst) && w.take()) {
                    mine.push_back(*it);
                    it = q.works.erase(it);
                } else {
                    ++it;
                }
            }
            if (mine.empty()) {
                if (q.stop && q.works.empty())
                    return;
                auto any = [&q] { return q.stop || !q.works.empty(); };
                if (!q.works.empty()) {
                    // the oldest one's moment, or until a caller asks for a future
                    q.cv.wait_until(g, q.works.front()->started + kCallerFirst);
                } else if (!q.cv.wait_for(g, kCallerFirst, any)) {
                    // after a quiet while it sleeps until enqueue wakes it
                    q.idle = true;
                    q.cv.wait(g, any);
                    q.idle = false;
                }
                continue;
            }
            g.unlock();
            // it must not spin: it runs beside backprop, whose compute needs the cores more
            // than a future needs to complete within microseconds
            for (auto it = mine.begin(); it != mine.end();) {
                // a callback of an earlier one may have completed it (wait() in a callback)
                if ((*it)->concluded() || (*it)->poll()) {
                    (*it)->conclude();
                    done.push_back(*it);
                    it = mine.erase(it);
                } else {
                    ++it;
                }
            }
            bool progress = !done.empty();
            done.clear(); // the last references to tensors, released outside the lock
            if (!progress)
                std::this_thread::sleep_for(kPoll);
            g.lock();
        }
    }

    void check_root(int root, const char *what) const
    {
        TORCH_CHECK(root >= 0 && root < size_, "gcoll: ", what, ": rank ", root, " is not in a group of ", size_);
    }

    static void check_tag(int tag, const char *what)
    {
        TORCH_CHECK(tag == 0, "gcoll: ", what, " with tag ", tag,
                    ": gcoll matches the messages between two ranks in the order they were sent; "
                    "only tag 0 is served");
    }

    static void same_shape(const at::Tensor &a, const at::Tensor &b, const char *what)
    {
        check_tensor(a, what);
        TORCH_CHECK(a.numel() == b.numel() && a.scalar_type() == b.scalar_type(), "gcoll: ", what, ": a tensor of ",
                    a.numel(), " ", a.scalar_type(), " where the input has ", b.numel(), " ", b.scalar_type());
    }

    void check_list(const Tensors &list, const at::Tensor &like, const char *what) const
    {
        TORCH_CHECK(list.size() == size_t(size_), "gcoll: ", what, " takes one tensor per rank (", size_, "), got ",
                    list.size());
        for (auto &t : list)
            same_shape(t, like, what);
    }

    // The counts of an alltoall's blocks, in elements: split sizes are rows of dimension 0.
    void splits(const at::Tensor &t, const std::vector<int64_t> &s, const char *what, std::vector<size_t> &out) const
    {
        int64_t rows = t.dim() ? t.size(0) : 1, row = rows ? t.numel() / rows : 0;
        if (s.empty()) {
            TORCH_CHECK(rows % size_ == 0, "gcoll: alltoall_base: the ", what, "'s ", rows,
                        " rows do not split evenly over ", size_, " ranks");
            out.assign(size_t(size_), size_t(rows / size_ * row));
            return;
        }
        TORCH_CHECK(s.size() == size_t(size_), "gcoll: alltoall_base: ", s.size(), " ", what, " split sizes for ",
                    size_, " ranks");
        int64_t sum = 0;
        for (int64_t x : s) {
            TORCH_CHECK(x >= 0, "gcoll: alltoall_base: a negative ", what, " split size ", x);
            sum += x;
            out.push_back(size_t(x * row));
        }
        TORCH_CHECK(sum == rows, "gcoll: alltoall_base: the ", what, " split sizes add up to ", sum, ", not its ", rows,
                    " rows");
    }

    static int64_t total(const Tensors &ts)
    {
        int64_t n = 0;
        for (auto &t : ts)
            n += t.numel();
        return n;
    }

    static at::Tensor flatten(const Tensors &ts, const char *what)
    {
        for (auto &t : ts) {
            check_tensor(t, what);
            TORCH_CHECK(t.scalar_type() == ts[0].scalar_type(), "gcoll: ", what, ": tensors of types ",
                        ts[0].scalar_type(), " and ", t.scalar_type(), " in one call");
        }
        Tensors flat;
        for (auto &t : ts)
            flat.push_back(t.reshape({-1}));
        return at::cat(flat);
    }

    static void unflatten(const at::Tensor &flat, const Tensors &outs)
    {
        int64_t at = 0;
        for (auto &t : outs) {
            const_cast<at::Tensor &>(t).copy_(flat.narrow(0, at, t.numel()).view(t.sizes()));
            at += t.numel();
        }
    }

    c10::intrusive_ptr<c10d::Store> store_;
    gcoll_comm_t comm_ = nullptr;
    std::shared_ptr<Queue> queue_ = std::make_shared<Queue>();
    std::thread completer_;
    std::atomic<bool> bucket_priorities_{true};
};

} // namespace

PYBIND11_MODULE(gcoll_c10d, m)
{
    m.doc() = "gcoll's torch.distributed process group (loaded by gcoll.torch)";
    py::object base = py::module::import("torch._C._distributed_c10d").attr("ProcessGroup");
    py::class_<ProcessGroupGcoll, c10::intrusive_ptr<ProcessGroupGcoll>>(m, "ProcessGroupGcoll", base)
        .def(py::init<const c10::intrusive_ptr<c10d::Store> &, int, int, double>(), py::arg("store"), py::arg("rank"),
             py::arg("size"), py::arg("timeout_s"), py::call_guard<py::gil_scoped_release>())
        .def("adasum", &ProcessGroupGcoll::adasum, py::arg("tensor"), py::arg("counts"),
             py::call_guard<py::gil_scoped_release>())
        .def("set_bucket_priorities", &ProcessGroupGcoll::set_bucket_priorities, py::arg("on"))
        .def("bucket_priorities", &ProcessGroupGcoll::bucket_priorities)
        .def(
            "dump",
            [](const ProcessGroupGcoll &pg, const std::string &path) {
                ok(gcoll_comm_dump(pg.comm(), path.c_str()), "gcoll_comm_dump");
            },
            py::arg("path"), py::call_guard<py::gil_scoped_release>())
        .def("transport", [](const ProcessGroupGcoll &pg) {
            const char *name = "";
            ok(gcoll_comm_transport(pg.comm(), &name), "gcoll_comm_transport");
            return std::string(name);
        });
    // The priority of this thread's operations from now on (None: the default, bucket priorities
    // for gradient reductions); returns the one before.
    m.def(
        "set_priority",
        [](c10::optional<int> p) {
            c10::optional<int> before = tl_priority_set ? c10::optional<int>(tl_priority) : c10::nullopt;
            tl_priority_set = p.has_value();
            tl_priority = p.value_or(0);
            return before;
        },
        py::arg("priority"));
}
