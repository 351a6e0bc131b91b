// train/options.h — a training run's options: what train_gpt's flags set and what a run folder's
// config.json keeps, with the defaults that depend on other flags and the flags a resumed run may
// change.
#pragma once
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "autograd/dtype.h"
#include "io/flags.h"
#include "models/gpt.h"
#include "models/lora/gpt_lora.h"
#include "models/llama.h"

namespace tg::train {

struct TrainOptions {
  // The model's shape (--context, --emb-dim, --heads, --layers, --dropout); its vocab_size comes
  // from the text's characters.
  models::GPTConfig model{.context_length = 64, .emb_dim = 64, .n_heads = 4, .n_layers = 2, .drop_rate = 0.0};
  // The architecture of a run from scratch, of that shape: "gpt2" (models/gpt.h), or "llama",
  // "qwen2" or "qwen3" (models/llama.h: RMSNorm, RoPE, a SwiGLU feed-forward, grouped-query
  // attention; qwen2 adds biases on q, k and v, qwen3 the QK-norm). llama_config says how the size
  // flags become a LlamaConfig. A run from a Hugging Face folder (--init-from) has the folder's.
  std::string arch = "gpt2";
  int64_t kv_heads = 0;  // llama, qwen3: the key/value heads of grouped-query attention; 0 = --heads
  int64_t steps = 1500;
  double max_minutes = 0;  // a time budget: stop (evaluate, save, write samples) once it is spent; 0 = none
  int64_t batch = 16;
  int64_t grad_accum = 1;  // micro-batches of `batch` sequences whose gradients one step averages
  double lr = 2e-3;
  double min_lr = 2e-4;
  std::string lr_schedule = "cosine";
  int64_t warmup = 50;
  // The cosine's decay (learning_rate, trainer.h): from decay_lr (below 0: lr) at step decay_start
  // (0: warmup) down to min_lr at steps, the rate held at lr between the two. A run resumed with
  // another --steps sets both to the step it resumes at and the rate it had there
  // (continued_schedule), so that the rate goes on without a jump; a second resume reads them back.
  int64_t decay_start = 0;
  double decay_lr = -1;
  double weight_decay = 0.1;
  double grad_clip = 1.0;  // 0 = off
  std::string on_nonfinite = "error";  // a non-finite loss or gradient norm: "error" or "skip" the step
  std::string precision = "fp32";  // "bf16": the forward (and so the backward) under AutocastGuard(kBFloat16)
  // A Llama / Qwen folder's frozen weights (a LoRA run's base; --eval-only's model): "auto" keeps a
  // BF16 or F16 file's matrices 16-bit (models/hf/hf_folder.h: the same numbers, half the memory),
  // "float32" widens them. Weights being trained are float32 either way.
  std::string dtype = "auto";
  // "none", "every" or "ffn": what the blocks recompute in backward instead of keeping
  // (models::Checkpointing); the numbers are the same bit for bit, so a resumed run may change it
  std::string checkpoint_activations = "none";
  // > 0: the head and the loss in chunks of this many rows (nn/chunked_loss.h), so the (B*T, V)
  // logits are never whole in memory; the same numbers to float32 rounding. 0: in one piece.
  int64_t loss_chunk = 0;
  int64_t seed = 1337;
  int64_t eval_every = 250;  // not given: default_eval_every(steps)
  int64_t eval_batches = 20;
  // FORMAT:FILE: a multiple-choice task (train/task_formats.h) scored at every evaluation, its
  // first eval_task_limit items (0: all), into loss.csv's task_acc and task_acc_norm; "" = none
  std::string eval_task;
  int64_t eval_task_limit = 200;
  int64_t threads = 0;  // 0 = all cores
  std::string out = "gpt_run";
  std::string resume;  // a run's --out folder to continue
  std::string data;    // a text file; empty = the built-in corpus
  // "jsonl": --data holds instruction examples (train/instructions.h); "chat": conversations
  // (train/chat_data.h); both are fine-tuning examples, only their responses learnt
  std::string data_format = "text";
  // "lm": learn the next token of --data; "classify": --data holds labelled texts
  // (train/classification_data.h) and the model becomes a classifier of them
  // (models/sequence_classification.h: a head on the last token's hidden state)
  std::string task = "lm";
  std::string columns;  // classify: a file without a header row, its columns in order ("label,text")
  bool balance = false;  // classify: every class cut down to the smallest one's count (the book's undersampling)
  // classify: the validation and test splits as files of their own (both, or neither: --data split
  // 70/10/20); --data is then the training split whole
  std::string val_data, test_data;
  // classify: which body weights train beside the head: "all", "last" (the last block and the final
  // norm) or "lora" (--lora-rank's adapters); train_gpt's default: last with --init-from, else all
  std::string train_layers = "all";
  std::string init_from;  // a Hugging Face GPT-2 folder: the run starts from its weights and tokenizer
  // "char": the text's characters; "bpe": byte-level BPE learned from it; else a path: a
  // tokenizer.json, or a folder with one or with GPT-2's files (tokenizers/tokenizer.h)
  std::string tokenizer = "char";
  int64_t vocab_size = 1024;       // BPE's vocabulary (256 bytes + merges); unused by "char"
  int64_t sample_tokens = 300;
  std::string write_corpus;  // write the built-in corpus to this file and stop
  bool eval_only = false;    // evaluate the --resume run's model (on --data, or its val split) and stop
  // LoRA (a run from GPT-2): adapters of this rank on lora_targets train instead of the weights
  // (models/lora/gpt_lora.h); 0 = none, every weight trains
  int64_t lora_rank = 0;
  double lora_alpha = 0;              // the update's scale is alpha / rank; train_gpt's default: the rank
  std::string lora_targets = "attn";  // "attn", "mlp" or "attn,mlp"
  std::string merge_lora;  // with --resume: write the run's model with its adapters merged here, and stop
  bool overwrite = false;  // --merge-lora into a folder that holds a model already: replace that model
};

// The options as flags: name, the field it sets, its range or choices, with no help (the program
// that parses them gives that: examples/train_gpt.cpp). A run folder's config.json keeps them
// under "train" by these names (train/run_folder.h), so the command line and the file are one list.
std::vector<Flag> option_fields(TrainOptions& o);

// The flags a resumed run may change, in the order its refusal lists them; every other one comes
// from its config.json. The modes (resume, eval-only, merge-lora, overwrite) are no saved options.
const std::vector<std::string>& resumable_flags();
// Those flags as text: "--steps, --max-minutes, ... and --loss-chunk".
std::string resumable_flag_list();

// The options of a resumed run: saved (its config.json), with each resumable flag in given (the
// flags typed, by name) taken from typed; out is the run's own folder unless given. A flag in given that is not resumable and differs from its saved value is a UsageError
// naming it and the flags that can change.
TrainOptions resumed_options(const TrainOptions& saved, TrainOptions typed, const std::vector<std::string>& given);

// The warmup of a run whose --warmup was not given: 50 steps, at most a tenth of --steps, so a
// short first run (--steps 20) just works.
inline int64_t default_warmup(int64_t steps) { return std::min<int64_t>(50, steps / 10); }

// The evaluation interval of a run whose --eval-every was not given: 250 steps, at most a fifth of
// --steps (at least 1), so a short run (a 150-step fine-tune) is evaluated five times, not once.
// A resumed run keeps the value it was saved with unless --eval-every is given.
inline int64_t default_eval_every(int64_t steps) { return std::clamp<int64_t>(steps / 5, 1, 250); }

// The LlamaConfig of a llama or qwen3 run of this vocabulary, from the size flags:
//   hidden_size = --emb-dim, num_attention_heads = --heads, num_key_value_heads = --kv-heads
//   (--heads when 0), head_dim = emb-dim / heads, num_hidden_layers = --layers,
//   max_position_embeddings = --context, tie_word_embeddings = --tie-weights,
//   attention_dropout = --dropout (the only dropout these models have),
//   intermediate_size = swiglu_width(emb-dim); model_type "qwen2" has q, k, v biases, "qwen3" the
//   QK-norm.
// rope_theta and rms_norm_eps are transformers' defaults (10000, 1e-6). A size that does not
// divide is a UsageError naming the flags.
models::LlamaConfig llama_config(const TrainOptions& o, int64_t vocab_size);

// The SwiGLU's width for a model of width C: 8C/3 rounded up to a multiple of 8, so that its three
// matrices (3 C I weights) hold what the GPT's two (C x 4C and 4C x C, 8 C^2) do.
inline int64_t swiglu_width(int64_t C) { return (8 * C / 3 + 7) / 8 * 8; }

// --data-format jsonl or chat: the data are examples (padded batches, masked targets), not a text.
inline bool is_example_data(const TrainOptions& o) { return o.data_format == "jsonl" || o.data_format == "chat"; }

// --task classify: the data are labelled texts and the model a classifier.
inline bool is_classification(const TrainOptions& o) { return o.task == "classify"; }

// kBFloat16 for precision "bf16", else kFloat32: what the forward's AutocastGuard is given.
ScalarType products_dtype(const TrainOptions& o);

// The adapters --lora-rank, --lora-alpha and --lora-targets ask for (rank > 0); a bad
// --lora-targets is an Error naming it.
models::LoRAConfig lora_config(const TrainOptions& o);

// --- the policy of train_gpt's flags: what they mean together. given: the flags typed, by name ---

// A fresh run's flags against each other, before any work (each refusal a UsageError naming its
// flag): --arch and --kv-heads, --task classify's flags, the --lora-* flags; and the defaults
// that follow from others: --warmup and --eval-every from --steps, --lora-alpha the rank,
// --train-layers lora with --lora-rank, last with --init-from, else all.
void check_fresh_run(TrainOptions& o, const std::vector<std::string>& given);

// --data-format not given: for a --data FILE.jsonl, "chat" when its first line is a conversation
// (has "messages"), else "jsonl" (train/chat_data.h: example_format).
void infer_data_format(TrainOptions& o, const std::vector<std::string>& given);

// What a fresh run from a Hugging Face folder (GPT-2's, or a Llama / Qwen one) takes from it: its
// shape (those flags are refused) and, unless --tokenizer PATH, its tokenizer; and a fine-tune's
// defaults (--context at most 256, --batch 4, --lr 1e-4, --min-lr 1e-5). model: "GPT-2",
// "Qwen3", ... for the messages; context and dropout: the folder's config's.
void take_folder_defaults(TrainOptions& o, const std::vector<std::string>& given, const std::string& model,
                          int64_t context, double dropout);

// --lora-rank against the folder's config (models::lora_rank_problem): a rank past the smallest
// adapted matrix's min(in, out) is a UsageError, before the model or any adapter takes memory.
void check_lora_rank(const TrainOptions& o, const models::GPTConfig& config);
void check_lora_rank(const TrainOptions& o, const models::LlamaConfig& config);

}  // namespace tg::train
