import Reactor
