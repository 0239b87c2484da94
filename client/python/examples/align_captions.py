#!/usr/bin/env python3
"""Aligns a transcript to its recording through gmmscored's Align RPC and
prints caption lines with their times (WebVTT cue timing, or SRT).

    python3 align_captions.py --server localhost:50051 --model en-us speech.wav transcript.txt
    00:00:00.210 --> 00:00:01.290  He was not an
    00:00:01.290 --> 00:00:02.740  ill disposed young man.

The model must be a served CMU Sphinx model with a pronunciation dictionary
(gmmscored --align_dictionary, or ModelConfig.dictionary). The WAV must be
16-bit mono at the model's rate. The transcript is plain text: words are
looked up without their punctuation and lowercased (as the dictionary has
them) but printed as written. A line ends at --max_words words, at
--max_seconds, or at a pause of --pause seconds (the aligner's silence).
"""
import argparse
import re
import sys
import wave

import numpy as np

import gmmscore


def read_pcm16(path):
    with wave.open(path) as wav:
        if wav.getsampwidth() != 2 or wav.getnchannels() != 1:
            raise SystemExit(f"{path}: Align takes 16-bit mono audio")
        return np.frombuffer(wav.readframes(wav.getnframes()), dtype="<i2"), wav.getframerate()


def dictionary_form(token):
    """The word the dictionary knows: no surrounding punctuation, lowercase
    (inner apostrophes and hyphens stay: "don't", "well-known")."""
    return re.sub(r"^[^\w']+|[^\w']+$", "", token).lower()


def timestamp(seconds, srt):
    millis = int(round(seconds * 1000))
    hours, millis = divmod(millis, 3_600_000)
    minutes, millis = divmod(millis, 60_000)
    secs, millis = divmod(millis, 1000)
    return f"{hours:02d}:{minutes:02d}:{secs:02d}{',' if srt else '.'}{millis:03d}"


def caption_lines(response, shown, max_words, max_seconds, pause):
    """[(start, end, text)]: the aligned words (shown as `shown[i]`) grouped
    into lines."""
    lines, words, start, end = [], [], 0.0, 0.0
    for segment in response.words:
        segment_end = segment.start_seconds + segment.duration_seconds
        if segment.filler:
            if words and segment.duration_seconds >= pause:
                lines.append((start, end, " ".join(words)))
                words = []
            continue
        if words and (len(words) >= max_words or segment_end - start > max_seconds):
            lines.append((start, end, " ".join(words)))
            words = []
        if not words:
            start = segment.start_seconds
        words.append(shown[segment.word_index])
        end = segment_end
    if words:
        lines.append((start, end, " ".join(words)))
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("wav")
    parser.add_argument("transcript", help="text file of the words spoken")
    parser.add_argument("--server", default="localhost:50051")
    parser.add_argument("--model", default="en-us")
    parser.add_argument("--max_words", type=int, default=7)
    parser.add_argument("--max_seconds", type=float, default=3.5)
    parser.add_argument("--pause", type=float, default=0.3)
    parser.add_argument("--srt", action="store_true", help="SRT blocks instead of cue lines")
    parser.add_argument("--token_file", help="bearer token of a --scoring_token_file server")
    parser.add_argument("--tls_ca", help="PEM CA bundle: TLS")
    args = parser.parse_args()

    shown = open(args.transcript, encoding="utf-8").read().split()
    words = [dictionary_form(token) for token in shown]
    kept = [i for i, word in enumerate(words) if word]  # a lone "--" is no word
    pcm, rate = read_pcm16(args.wav)
    token = open(args.token_file).read() if args.token_file else None
    with gmmscore.Client(args.server, tls=args.tls_ca, token=token) as client:
        try:
            response = client.align(args.model, [words[i] for i in kept], audio=pcm,
                                    sample_rate=rate, utterance_id=args.wav)
        except gmmscore.Error as error:
            sys.exit(f"align_captions: {error}")
    lines = caption_lines(response, [shown[i] for i in kept], args.max_words,
                          args.max_seconds, args.pause)
    for number, (start, end, text) in enumerate(lines, 1):
        if args.srt:
            print(f"{number}\n{timestamp(start, True)} --> {timestamp(end, True)}\n{text}\n")
        else:
            print(f"{timestamp(start, False)} --> {timestamp(end, False)}  {text}")


if __name__ == "__main__":
    main()
