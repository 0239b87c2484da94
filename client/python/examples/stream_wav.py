#!/usr/bin/env python3
"""Streams a WAV file through a gmmscored audio stream at real-time pace,
as a live captioning front end would, and prints every quarter second the
best states of the newest frame and, with several models (speaker-cluster
models of one state set), the model that dominated the last quarter second.

    python3 stream_wav.py --server localhost:50051 --model en-us speech.wav
    python3 stream_wav.py --server host:50051 --model spk1,spk2,spk3 --token_file t speech.wav

The server computes the models' features from the audio (StreamConfig.audio;
the models need a front end: a CMU Sphinx model's feat.params, or
ModelConfig.front_end). 16-bit WAVs travel as PCM16; other sample widths and
stereo are mixed down to mono float32 and sent as FLOAT32. The WAV's rate
must be the front end's (the server does not resample).
"""
import argparse
import sys
import time
import wave

import numpy as np

import gmmscore


def read_wav(path):
    """(samples, sample_rate, audio): mono int16 for 16-bit mono files
    (audio=True: PCM16), else mono float32 in [-1, 1] (audio="float32")."""
    with wave.open(path) as wav:
        width, channels, rate = wav.getsampwidth(), wav.getnchannels(), wav.getframerate()
        raw = wav.readframes(wav.getnframes())
    if width == 2 and channels == 1:
        return np.frombuffer(raw, dtype="<i2"), rate, True
    if width == 1:  # 8-bit WAV is unsigned
        samples = (np.frombuffer(raw, dtype=np.uint8).astype(np.float32) - 128) / 128
    elif width in (2, 4):
        dtype = "<i2" if width == 2 else "<i4"
        samples = np.frombuffer(raw, dtype=dtype).astype(np.float32) / float(1 << (8 * width - 1))
    else:
        raise SystemExit(f"{path}: {8 * width}-bit samples are not supported")
    return samples.reshape(-1, channels).mean(axis=1, dtype=np.float32), rate, "float32"


def describe(answers, shift_s, top):
    """One line for the answers of the last quarter second."""
    newest = answers[-1]
    last_row = newest.loglikes[-1]
    best = np.argsort(-last_row, kind="stable")[:top]
    states = "  ".join(f"{s}:{last_row[s]:.1f}" for s in best)
    end_frame = newest.first_frame + newest.num_frames
    line = f"{end_frame * shift_s:7.2f} s  frame {end_frame - 1:5d}  best {states}"
    if newest.fusion is not None:
        frames_by_model = {}
        for answer in answers:
            frames_by_model[answer.dominant_model] = (
                frames_by_model.get(answer.dominant_model, 0) + answer.num_frames)
        line += f"  dominant {max(frames_by_model, key=frames_by_model.get)}"
    return line


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("wav")
    parser.add_argument("--server", default="localhost:50051")
    parser.add_argument("--model", required=True, help="NAME[,NAME...] served by the server")
    parser.add_argument("--fusion", default="posterior", help="max, logsumexp or posterior")
    parser.add_argument("--chunk_ms", type=float, default=50, help="audio per push")
    parser.add_argument("--speed", type=float, default=1.0,
                        help="pace relative to real time (0: as fast as possible)")
    parser.add_argument("--top", type=int, default=3, help="best states to print")
    parser.add_argument("--frame_shift_ms", type=float, default=10)
    parser.add_argument("--token_file", help="bearer token of a --scoring_token_file server")
    parser.add_argument("--tls_ca", help="PEM CA bundle: TLS")
    args = parser.parse_args()

    samples, rate, audio = read_wav(args.wav)
    token = open(args.token_file).read() if args.token_file else None
    step = max(1, int(rate * args.chunk_ms / 1000))
    shift_s = args.frame_shift_ms / 1000
    client = gmmscore.Client(args.server, tls=args.tls_ca, token=token)
    start = time.monotonic()
    next_print = 0.25
    pending = []
    try:
        with client.stream(args.model.split(","), fusion=args.fusion, audio=audio,
                           sample_rate=rate, top_k=args.top, stream_id=args.wav) as stream:
            for at in range(0, len(samples), step):
                if args.speed > 0:  # wait until this chunk has been "spoken"
                    time.sleep(max(0.0, start + at / rate / args.speed - time.monotonic()))
                stream.push_audio(samples[at:at + step])
                pending += stream.poll()  # what has come back, without waiting
                if pending and (at + step) / rate >= next_print:
                    print(describe(pending, shift_s, args.top), flush=True)
                    pending, next_print = [], next_print + 0.25
            stream.close()  # the front end releases the frames it held back
            pending += list(stream)
            if pending:
                print(describe(pending, shift_s, args.top), flush=True)
            seconds = stream.samples_pushed / rate
    except gmmscore.Error as error:
        sys.exit(f"stream_wav: {error}")
    finally:
        client.close()
    elapsed = time.monotonic() - start
    print(f"streamed {seconds:.2f} s of audio in {elapsed:.2f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
