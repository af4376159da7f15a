#include "alto/tokenizers/internal/regex.h"

#include <algorithm>
#include <limits>

#include "alto/core/error.h"
#include "alto/tokenizers/internal/unicode.h"

namespace alto::tokenizers {

namespace {

// A borrowed callable (no allocation per backtracking step).
template <typename Signature>
class FunctionRef;
template <typename R, typename... Args>
class FunctionRef<R(Args...)> {
 public:
  template <typename F>
  FunctionRef(const F& f)  // NOLINT: implicit by design
      : object_(&f), call_([](const void* o, Args... a) { return (*static_cast<const F*>(o))(a...); }) {}
  R operator()(Args... a) const { return call_(object_, a...); }

 private:
  const void* object_;
  R (*call_)(const void*, Args...);
};
using Continuation = FunctionRef<bool(size_t)>;

char32_t ascii_lower(char32_t c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; }
char32_t ascii_upper(char32_t c) { return c >= 'a' && c <= 'z' ? c - 32 : c; }

struct ClassItem {
  enum Kind { kRange, kSpace, kDigit, kWord, kCategory } kind = kRange;
  char32_t low = 0, high = 0;
  std::string category;  // one or two letters
  bool negated = false;

  static ClassItem range(char32_t low, char32_t high) {
    ClassItem item;
    item.low = low, item.high = high;
    return item;
  }

  bool matches(char32_t c) const {
    bool in = false;
    switch (kind) {
      case kRange:
        in = c >= low && c <= high;
        break;
      case kSpace:
        in = unicode::is_space(c);
        break;
      case kDigit:
        in = unicode::general_category(c) == "Nd";
        break;
      case kWord: {
        const std::string gc = unicode::general_category(c);
        in = gc[0] == 'L' || gc[0] == 'M' || gc[0] == 'N' || gc == "Pc";
        break;
      }
      case kCategory: {
        const std::string gc = unicode::general_category(c);
        in = category.size() == 1 ? gc[0] == category[0] : gc == category;
        break;
      }
    }
    return in != negated;
  }
};

struct CharSet {
  std::vector<ClassItem> items;
  bool negated = false;
  bool ignore_case = false;

  bool matches(char32_t c) const {
    bool in = false;
    for (const auto& item : items) {
      in = item.matches(c) ||
           (ignore_case && (item.matches(ascii_lower(c)) || item.matches(ascii_upper(c))));
      if (in) break;
    }
    return in != negated;
  }
};

struct Node {
  enum Kind { kSet, kSequence, kAlternation, kRepeat, kLookahead, kStart, kEnd } kind = kSequence;
  CharSet set;                // kSet
  std::vector<int> children;  // kSequence, kAlternation; kRepeat and kLookahead: one
  size_t min = 0, max = 0;    // kRepeat
  bool greedy = true;         // kRepeat
  bool negative = false;      // kLookahead
};

constexpr size_t kUnbounded = std::numeric_limits<size_t>::max();

class Parser {
 public:
  Parser(const std::string& pattern, const std::string& where, std::vector<Node>& nodes)
      : text_(unicode::decode_utf8(pattern, where.c_str()).code_points),
        where_(where),
        pattern_(pattern),
        nodes_(nodes) {}

  int parse() {
    const int root = alternation(false);
    if (at_ < text_.size()) fail("an unmatched ')'");
    return root;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw Unsupported(where_ + ": the pattern '" + pattern_ + "' has " + what + " at character " +
                      std::to_string(at_) + " (alto's pre-tokenizer regex takes alternation, "
                      "groups, lookahead, quantifiers, classes and \\p{..} categories)");
  }
  bool done() const { return at_ >= text_.size(); }
  char32_t peek() const { return text_[at_]; }
  bool accept(char32_t c) {
    if (done() || peek() != c) return false;
    ++at_;
    return true;
  }
  int add(Node node) {
    nodes_.push_back(std::move(node));
    return static_cast<int>(nodes_.size()) - 1;
  }

  int alternation(bool ignore_case) {
    Node alt;
    alt.kind = Node::kAlternation;
    alt.children.push_back(sequence(ignore_case));
    while (accept('|')) alt.children.push_back(sequence(ignore_case));
    return alt.children.size() == 1 ? alt.children.front() : add(std::move(alt));
  }

  int sequence(bool ignore_case) {
    Node seq;
    seq.kind = Node::kSequence;
    while (!done() && peek() != '|' && peek() != ')') seq.children.push_back(quantified(ignore_case));
    return add(std::move(seq));
  }

  size_t number() {
    size_t value = 0, digits = 0;
    while (!done() && peek() >= '0' && peek() <= '9') value = value * 10 + (text_[at_++] - '0'), ++digits;
    if (!digits) fail("a malformed {m,n}");
    return value;
  }

  int quantified(bool ignore_case) {
    const int atom_index = atom(ignore_case);
    if (done()) return atom_index;
    Node repeat;
    repeat.kind = Node::kRepeat;
    if (accept('?')) {
      repeat.min = 0, repeat.max = 1;
    } else if (accept('*')) {
      repeat.min = 0, repeat.max = kUnbounded;
    } else if (accept('+')) {
      repeat.min = 1, repeat.max = kUnbounded;
    } else if (accept('{')) {
      repeat.min = number();
      repeat.max = repeat.min;
      if (accept(',')) repeat.max = !done() && peek() == '}' ? kUnbounded : number();
      if (!accept('}') || repeat.max < repeat.min) fail("a malformed {m,n}");
    } else {
      return atom_index;
    }
    if (accept('?')) repeat.greedy = false;
    if (!done() && peek() == '+') fail("a possessive quantifier");
    if (!done() && (peek() == '*' || peek() == '?' || peek() == '{')) fail("a repeated quantifier");
    repeat.children.push_back(atom_index);
    return add(std::move(repeat));
  }

  int atom(bool ignore_case) {
    const char32_t c = text_[at_++];
    Node node;
    switch (c) {
      case '(': {
        int inner;
        if (accept('?')) {
          if (accept(':')) {
            inner = alternation(ignore_case);
          } else if (accept('i') && accept(':')) {
            inner = alternation(true);
          } else if (!done() && (peek() == '=' || peek() == '!')) {
            node.kind = Node::kLookahead;
            node.negative = text_[at_++] == '!';
            node.children.push_back(alternation(ignore_case));
            inner = add(std::move(node));
          } else {
            fail("an unsupported group kind");
          }
        } else {
          inner = alternation(ignore_case);  // captures are not needed: a plain group
        }
        if (!accept(')')) fail("an unclosed group");
        return inner;
      }
      case '[':
        node.kind = Node::kSet;
        node.set = char_class(ignore_case);
        return add(std::move(node));
      case '.':
        node.kind = Node::kSet;
        node.set.negated = true;
        node.set.items.push_back(ClassItem::range('\n', '\n'));
        return add(std::move(node));
      case '^':
        node.kind = Node::kStart;
        return add(std::move(node));
      case '$':
        node.kind = Node::kEnd;
        return add(std::move(node));
      case ')':
      case '*':
      case '+':
      case '?':
      case '{':
        --at_;
        fail("a misplaced '" + std::string(1, static_cast<char>(c)) + "'");
      default:
        node.kind = Node::kSet;
        node.set.ignore_case = ignore_case;
        node.set.items.push_back(c == '\\' ? escape() : ClassItem::range(c, c));
        return add(std::move(node));
    }
  }

  // After a backslash.
  ClassItem escape() {
    if (done()) fail("a trailing backslash");
    const char32_t c = text_[at_++];
    ClassItem item;
    auto literal = [&](char32_t v) {
      item.low = item.high = v;
      return item;
    };
    switch (c) {
      case 'r': return literal('\r');
      case 'n': return literal('\n');
      case 't': return literal('\t');
      case 'f': return literal('\f');
      case 'v': return literal('\v');
      case 's': case 'S':
        item.kind = ClassItem::kSpace, item.negated = c == 'S';
        return item;
      case 'd': case 'D':
        item.kind = ClassItem::kDigit, item.negated = c == 'D';
        return item;
      case 'w': case 'W':
        item.kind = ClassItem::kWord, item.negated = c == 'W';
        return item;
      case 'p': case 'P': {
        item.kind = ClassItem::kCategory;
        item.negated = c == 'P';
        if (accept('{')) {
          if (accept('^')) item.negated = !item.negated;
          while (!done() && peek() != '}') item.category += static_cast<char>(text_[at_++]);
          if (!accept('}')) fail("an unclosed \\p{");
        } else if (!done()) {
          item.category = std::string(1, static_cast<char>(text_[at_++]));
        }
        static const std::string kMajors = "LMNPSZC";
        static const std::vector<std::string> kMinors = {
            "Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd", "Nl", "No", "Pc", "Pd", "Ps",
            "Pe", "Pi", "Pf", "Po", "Sm", "Sc", "Sk", "So", "Zs", "Zl", "Zp", "Cc", "Cf", "Cs",
            "Co", "Cn"};
        const bool known =
            (item.category.size() == 1 && kMajors.find(item.category[0]) != std::string::npos) ||
            std::find(kMinors.begin(), kMinors.end(), item.category) != kMinors.end();
        if (!known) fail("an unknown category \\p{" + item.category + "}");
        return item;
      }
      default:
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
          fail("an unsupported escape \\" + std::string(1, static_cast<char>(c)));
        return literal(c);  // escaped punctuation
    }
  }

  // After '['.
  CharSet char_class(bool ignore_case) {
    CharSet set;
    set.ignore_case = ignore_case;
    set.negated = accept('^');
    bool first = true;
    while (!done() && (peek() != ']' || first)) {
      first = false;
      const char32_t c = text_[at_++];
      if (c == '[') fail("a nested class");
      ClassItem item = c == '\\' ? escape() : ClassItem::range(c, c);
      // A range a-z (a '-' before ']' is literal).
      if (item.kind == ClassItem::kRange && item.low == item.high && at_ + 1 < text_.size() &&
          peek() == '-' && text_[at_ + 1] != ']') {
        ++at_;
        const char32_t d = text_[at_++];
        const ClassItem high = d == '\\' ? escape() : ClassItem::range(d, d);
        if (high.kind != ClassItem::kRange || high.low < item.low) fail("a bad range");
        item.high = high.low;
      }
      set.items.push_back(item);
    }
    if (!accept(']')) fail("an unclosed class");
    return set;
  }

  std::vector<char32_t> text_;
  size_t at_ = 0;
  std::string where_, pattern_;
  std::vector<Node>& nodes_;
};

}  // namespace

// A backtracking matcher can take exponential time on a hostile pattern ("(a*)*b") and recurse
// once per repetition of a group: a pattern from a file must not hang or overflow the stack.
// Real tokenizer patterns take a few dozen steps per character and recurse a few dozen deep.
constexpr size_t kMaxDepth = 2000;
constexpr size_t kStepsPerCharacter = 10000;

// The work left to the find_all() running on this thread (a Regex is shared between threads).
struct Budget {
  size_t steps = 0, depth = 0;
};
thread_local Budget* t_budget = nullptr;

struct Regex::Program {
  std::vector<Node> nodes;
  int root = 0;
  std::string where, pattern;

  [[noreturn]] void exhausted(const char* what) const {
    throw InvalidArgument(where + ": the pattern '" + pattern + "' " + what +
                          " on this text (a pattern that backtracks without bound)");
  }

  bool match(int index, const std::vector<char32_t>& text, size_t at, Continuation next) const {
    if (t_budget->steps-- == 0) exhausted("takes too many steps");
    if (++t_budget->depth > kMaxDepth) exhausted("nests too deep");
    const bool matched = match_node(index, text, at, next);
    --t_budget->depth;
    return matched;
  }

  bool match_node(int index, const std::vector<char32_t>& text, size_t at,
                  Continuation next) const {
    const Node& node = nodes[index];
    switch (node.kind) {
      case Node::kSet:
        return at < text.size() && node.set.matches(text[at]) && next(at + 1);
      case Node::kSequence:
        return sequence(node, 0, text, at, next);
      case Node::kAlternation:
        for (int child : node.children)
          if (match(child, text, at, next)) return true;
        return false;
      case Node::kRepeat:
        return nodes[node.children[0]].kind == Node::kSet ? repeat_set(node, text, at, next)
                                                           : repeat(node, 0, text, at, next);
      case Node::kLookahead: {
        const bool found = match(node.children[0], text, at, [](size_t) { return true; });
        return found != node.negative && next(at);
      }
      case Node::kStart:
        return at == 0 && next(at);
      case Node::kEnd:
        return at == text.size() && next(at);
    }
    return false;
  }

  bool sequence(const Node& node, size_t i, const std::vector<char32_t>& text, size_t at,
                Continuation next) const {
    if (i == node.children.size()) return next(at);
    return match(node.children[i], text, at,
                 [&](size_t p) { return sequence(node, i + 1, text, p, next); });
  }

  // A repeated class, iteratively: the longest run first (greedy) or the shortest (lazy).
  bool repeat_set(const Node& node, const std::vector<char32_t>& text, size_t at,
                  Continuation next) const {
    const CharSet& set = nodes[node.children[0]].set;
    size_t run = 0;
    while (run < node.max && at + run < text.size() && set.matches(text[at + run])) ++run;
    if (run < node.min) return false;
    if (node.greedy) {
      for (size_t n = run + 1; n-- > node.min;)
        if (next(at + n)) return true;
    } else {
      for (size_t n = node.min; n <= run; ++n)
        if (next(at + n)) return true;
    }
    return false;
  }

  bool repeat(const Node& node, size_t count, const std::vector<char32_t>& text, size_t at,
              Continuation next) const {
    auto more = [&]() {
      return count < node.max &&
             match(node.children[0], text, at, [&](size_t p) {
               return p != at && repeat(node, count + 1, text, p, next);  // no empty loops
             });
    };
    if (node.greedy) return more() || (count >= node.min && next(at));
    return (count >= node.min && next(at)) || more();
  }
};

Regex::Regex(const std::string& pattern, const std::string& where) {
  auto program = std::make_unique<Program>();
  program->root = Parser(pattern, where, program->nodes).parse();
  program->where = where;
  program->pattern = pattern;
  program_ = std::move(program);
}

Regex::~Regex() = default;
const std::string& Regex::pattern() const { return program_->pattern; }
Regex::Regex(Regex&&) noexcept = default;

std::vector<std::pair<size_t, size_t>> Regex::find_all(const std::vector<char32_t>& text) const {
  std::vector<std::pair<size_t, size_t>> matches;
  Budget budget{kStepsPerCharacter * (text.size() + 1), 0};
  struct Scope {  // restored however find_all() ends
    Budget* previous;
    ~Scope() { t_budget = previous; }
  } scope{t_budget};
  t_budget = &budget;
  for (size_t start = 0; start < text.size();) {
    size_t end = start;
    const bool found = program_->match(program_->root, text, start, [&](size_t p) {
      end = p;
      return true;
    });
    if (found && end > start) {
      matches.emplace_back(start, end);
      start = end;
    } else {
      ++start;
    }
  }
  return matches;
}

std::vector<std::pair<size_t, size_t>> Regex::split(const std::vector<char32_t>& text) const {
  std::vector<std::pair<size_t, size_t>> pieces;
  size_t at = 0;
  for (const auto& [begin, end] : find_all(text)) {
    if (begin > at) pieces.emplace_back(at, begin);
    pieces.emplace_back(begin, end);
    at = end;
  }
  if (at < text.size()) pieces.emplace_back(at, text.size());
  return pieces;
}

}  // namespace alto::tokenizers
