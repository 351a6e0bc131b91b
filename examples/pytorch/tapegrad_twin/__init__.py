"""tapegrad_twin — tapegrad's models, tokenizers, run folders and training loop written again in
PyTorch (and plain Python), so that the same seed gives the same weights, ids and losses on both
sides and a run moves between them. Read gpt_model.py first (the book's GPT, tg::models::GPTModel's
twin), then training.py (train_gpt's loop).

    gpt_model.py         the GPT and its sampling (models/gpt.h, models/generation/generate.h)
    hf_gpt2.py           GPT-2 in Hugging Face's layout, from_pretrained / save_pretrained
    hf_llama.py          Llama, Qwen2 and Qwen3 in Hugging Face's layout
    gpt2_layout.py       GPT-2's tensor names <-> gpt_model's
    lora.py              peft's LoRA adapters on hf_gpt2 / hf_llama
    bpe.py               byte-level BPE (tokenizers/bpe.h)
    gpt2_tokenizer.py    GPT-2's tokenizer (tokenizers/gpt2_tokenizer.h)
    small_gpt2_vocab.py  a small GPT-2-style vocabulary, for tests
    run_folder.py        a train_gpt run folder read and written (train/run_folder.h)
    training.py          train_gpt's loop: options, tokenizers, Run, train_loop (train/trainer.h)
    resume.py            a run folder loaded (load_model) and trained on (continue_run)
    classifier.py        a classifier's folder (models/sequence_classification.h)
    multiple_choice.py   examples/evaluate's multiple-choice scoring

The programs that use it are beside it in examples/pytorch/ (train_gpt.py, tapegrad_run.py,
evaluate.py, ...; Python puts a program's folder on the path). Scripts elsewhere (bench/*.py,
tests/python/*.py, tests/reference/make_*.py) import it with the folder on PYTHONPATH:

    PYTHONPATH=examples/pytorch /usr/bin/python3 tests/python/test_hf_gpt2.py

Importing the package imports nothing else (no torch); each module imports what it needs.
"""
