"""The bookkeeping the Python end-to-end tests share: expect(cond, what) collects the failures,
report() prints them (or "ok") and gives the exit status."""


class Expectations:
    def __init__(self):
        self.fails = []

    def __call__(self, cond, what):
        if not cond:
            self.fails.append(what)

    def report(self):
        for f in self.fails:
            print("FAIL:", f)
        print("ok" if not self.fails else f"{len(self.fails)} failed")
        return 1 if self.fails else 0
