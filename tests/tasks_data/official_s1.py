"""The official S1 function of CLUES, copied verbatim (code only) from microsoft/CLUES.

Source: https://github.com/microsoft/CLUES/blob/main/eval/S1.py at commit
995fd5e2e66289eafc87d01fbff052c87876eccb (the file's ``__main__`` self-test is left out). Used by the tests as the reference the platform must agree with.

MIT License

Copyright (c) Microsoft Corporation.

Permission is hereby granted, free of charge, to any person obtaining a copy
of this software and associated documentation files (the "Software"), to deal
in the Software without restriction, including without limitation the rights
to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
copies of the Software, and to permit persons to whom the Software is
furnished to do so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
SOFTWARE
"""
# ruff: noqa


# a, b are two lists, e.g, a: [1,2,3], b: [3,4,5]
# a is pred, b is ans
def _s1_entry(a, b):
    if len(b) == 0:
        if len(a) == 0:
            s1 = 1.0
        else:
            s1 = 0.0
    elif len(a) == 0:  # empty pred but non-empty answer
        s1 = 0.0
    else:
        sa = set(a)
        sb = set(b)
        c = len(sa.intersection(sb))
        p = 1.0 * c / len(sa)
        r = 1.0 * c / len(sb)

        if p == 0 or r == 0:
            s1 = 0.0
        else:
            s1 = 2.0 * (p * r) / (p + r)

    return s1


# ================== Compute S1 ========================
# ans and pred are list of lists (set of sets in nature)
def eval_S1(pred, ans):
    assert len(pred) == len(ans), "Size mismatch!"

    N = len(pred)
    s1 = 0
    for i in range(N):
        s1 += _s1_entry(pred[i], ans[i])

    s1 = s1 / N

    return s1
