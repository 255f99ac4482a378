// The interpreter's value of single elements of a graph's nodes, each computed on demand from
// the operands' elements it reads (memoized), with the meaning eval_node gives whole tensors:
// reductions folded in order r = 0, 1, ..., every node's value rounded to its dtype, a Gather
// index out of range a ShapeError. Checking a kernel at a few sampled elements
// (runtime/kernel_check.h) then costs the work of those elements, not of whole tensors. A node
// with a source is read from it instead of computed (a graph's inputs; the operands a kernel
// read, as the program computed them).
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include "runtime/native/host_elements.h"

namespace luminal::native {

// Thrown by value() past the step limit (set_step_limit).
struct StepLimitReached {};

// The memo of computed elements: an open-addressing table whose entries are forgotten all at
// once by a generation count (forget() runs at every source set, thousands of times a check).
class ElementMemo {
 public:
  const double* find(uint64_t key) const;
  void insert(uint64_t key, double value);
  void forget();
  size_t size() const { return size_; }
  // Changes whenever entries are forgotten (a growth keeps it): a stamp taken at an insert
  // that still equals it means the entry may be there.
  uint32_t generation() const { return generation_; }

 private:
  struct Slot {
    uint64_t key = 0;
    uint32_t generation = 0;  // the slot holds an entry where it equals generation_
    double value = 0;
  };
  size_t slot_of(uint64_t key) const;
  std::vector<Slot> slots_;
  uint32_t generation_ = 1;
  size_t size_ = 0;
};

// A node's value as stored: contiguous, row-major, in `dtype`'s storage.
struct ElementSource {
  const uint8_t* data = nullptr;
  DType dtype = DType::F32;
  int64_t numel = 0;
};

class ElementEval {
 public:
  ElementEval(const Graph& graph, const DynMap& dims);
  // `node` is read from `source` from now on (until clear_sources).
  void set_source(NodeId node, ElementSource source);
  // Forgets every source and every memoized element.
  void clear_sources();
  // Element `flat` (row-major) of `node`'s value: a float, or an integer as a double.
  double value(NodeId node, int64_t flat);
  int64_t numel(NodeId node);
  const std::vector<int64_t>& shape(NodeId node);
  // Elements computed and reduction steps taken so far: the work done.
  int64_t steps() const { return steps_; }
  // value() throws StepLimitReached once steps() passes `limit` (-1: no limit).
  void set_step_limit(int64_t limit) { step_limit_ = limit; }

 private:
  struct Info {
    bool ready = false;
    std::vector<int64_t> shape;
    int64_t numel = 0;
    std::vector<ConcreteView> views;  // each input's, evaluated
    // Per input: its view reads element i of the operand for element i (row-major, the same
    // shape, no mask), so no index is unflattened for it.
    std::vector<char> flat;
    // Per input: its view is the operand's own layout (its dims the operand's shape,
    // row-major, no mask), so an index into the view is the operand's index too.
    std::vector<char> identity;
    // What compute() asks of the node at every element, looked up once.
    const Node* node = nullptr;
    char category = 0;                // 'u' unary, 'b' binary, else 0
    bool float_operand = false;       // its first input's dtype is a float
    std::vector<DType> input_dtypes;  // per input
    double constant = 0;              // a Constant's value, stored as its dtype stores it
  };
  const Info& info(NodeId node);
  // `at`, where given: the element's index in node's shape (not unflattened again).
  double value_at(NodeId node, int64_t flat, const std::vector<int64_t>* at);
  double compute(NodeId node, int64_t flat, const std::vector<int64_t>* at);
  // Element p of node's buffer, bounds checked (`at`: its index, where known).
  double read(NodeId node, int64_t p, const std::vector<int64_t>* at = nullptr);

  const Graph& graph_;
  DynMap dims_;
  std::vector<Info> info_;
  std::vector<int64_t> numel_;  // per node, info's numel (-1: info not made yet)
  DynMap iota_env_;             // dims_ and "z", an Iota's element (made at the first)
  std::vector<ElementSource> sources_;  // per node; data null: computed
  std::vector<NodeId> sourced_;         // the nodes with a source, to clear
  ElementMemo memo_;
  // Per node, the memo's generation when one of its elements was last memoized: a node none of
  // whose elements is memoized now (most: elements cheaper than a memo entry) is not looked up
  // in the table.
  std::vector<uint32_t> memo_stamp_;
  int64_t steps_ = 0;
  int64_t step_limit_ = -1;
  std::deque<std::vector<int64_t>> scratch_;  // three index vectors per recursion depth
  size_t depth_ = 0;
};

}  // namespace luminal::native
