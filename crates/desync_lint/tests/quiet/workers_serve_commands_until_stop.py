"""An evaluation server. Rank 0 walks the batches and hands each one out by broadcast; the
other ranks sit in a command loop that receives every command from rank 0, scores its batch
with rank 0 (the same all-reduce), and returns when the command says stop. The workers issue
exactly what rank 0's messages tell them to, as many times as rank 0 sends, so the ranks
stay paired although they run different functions."""
import torch.distributed as dist

STOP = "stop"


def receive_command():
    box = [None]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def send_command(command, payload=None):
    dist.broadcast_object_list([(command, payload)], src=0)


class EvalServer:
    def __init__(self, model):
        self.model = model

    def score(self, batch):
        total = self.model(batch).float().sum()
        dist.all_reduce(total)
        return total

    def serve(self):
        while True:
            command, payload = receive_command()
            if command == STOP:
                return
            self.score(payload)

    def run(self, batches):
        scores = []
        for batch in batches:
            send_command("score", batch)
            scores.append(self.score(batch))
        send_command(STOP)
        return scores


def evaluate(model, batches):
    server = EvalServer(model)
    if dist.get_rank() != 0:
        server.serve()
        return None
    return server.run(batches)
