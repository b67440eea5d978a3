// aqmlab's dumbbell in ns-3: the program `python -m aqmlab.ns3.vsns3` compiles against the `ns3`
// wheel's C++ libraries and runs once per case and seed (docs/validation-ns3.md).
//
//   dumbbell SPEC OUT.json [SERIES.csv [EVENTS.csv]]
//
// SPEC is a text file written by aqmlab/ns3/plan.py from an aqmlab scenario, one directive a line
// (`#` starts a comment):
//
//   default <attribute path> <value>     Config::SetDefault (TCP, RTT estimator, queue discs)
//   bottleneck <bps> <delay ns> <limit p> <queue disc TypeId>   the R1 -> R2 link and its root queue disc
//   reverse <bps> <delay ns> <limit p>   the R2 -> R1 direction of the same link (FIFO)
//   access <bps> <limit p>               every access link's rate (both directions) and FIFO buffer
//   flow <cc TypeId> <start s> <sender delay ns> <receiver delay ns> <ecn Off|On> <pace 0|1>
//   window <warm-up s> <duration s>      the measurement window [warm-up, duration)
//   sample <s>                           period of the queue-length and cwnd series
//   rng <run>                            RngRun (RngSeed stays 1)
//
// Rates are the devices' wire rates: the caller adds the 2-byte PPP header to them so that an IP
// packet takes as long to send as the same packet does in aqmlab. Every device queue holds one
// packet (the queue disc above it holds the rest). Flow i runs from sender S_i (10.1.i.1) over
// its own access link to R1, the bottleneck to R2, and its own access link to receiver D_i.
//
// OUT.json: the bottleneck over the window (bytes whose transmission started in it, the
// time-average of waiting packets, queueing delays, the queue disc's counters by reason) and per
// flow (bottleneck bytes, goodput bytes, retransmissions, timeouts, recoveries, drops, marks, mean
// cwnd and smoothed RTT). SERIES.csv: time, queue length, and every flow's cwnd, every `sample`.
// EVENTS.csv (for reading a run closely): every flow's retransmissions, timeouts and congestion
// states, and the bottleneck's drops, with TCP sequence numbers in bytes (the first data byte is 1).

#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

using namespace ns3;

namespace ns3
{

/// A diagnostic, not a sender of the comparison: ns-3's TcpLinuxReno without the credit ns-3 gives
/// at the end of a fast recovery. TcpSocketBase::ProcessAck passes the growth hook every segment
/// from the old SND.UNA to the ACK that ends the recovery (most of them SACKed earlier, and its
/// comment says "from m_recover to ackNumber"), so TcpLinuxReno adds several segments at once; here
/// that ACK credits at most one, as Linux credits only what an ACK newly delivers
/// (docs/validation-ns3.md, "Reno under the AQMs").
class TcpLinuxRenoNoExitCredit : public TcpLinuxReno
{
  public:
    static TypeId GetTypeId()
    {
        static TypeId tid = TypeId("ns3::TcpLinuxRenoNoExitCredit")
                                .SetParent<TcpLinuxReno>()
                                .AddConstructor<TcpLinuxRenoNoExitCredit>();
        return tid;
    }

    TcpLinuxRenoNoExitCredit() = default;

    TcpLinuxRenoNoExitCredit(const TcpLinuxRenoNoExitCredit& other)
        : TcpLinuxReno(other)
    {
    }

    Ptr<TcpCongestionOps> Fork() override
    {
        return CopyObject<TcpLinuxRenoNoExitCredit>(this);
    }

    void CongestionStateSet(Ptr<TcpSocketState> tcb,
                            const TcpSocketState::TcpCongState_t state) override
    {
        // (called before the socket's own state changes)
        m_leavingRecovery =
            state == TcpSocketState::CA_OPEN && tcb->m_congState == TcpSocketState::CA_RECOVERY;
        TcpLinuxReno::CongestionStateSet(tcb, state);
    }

    void IncreaseWindow(Ptr<TcpSocketState> tcb, uint32_t segmentsAcked) override
    {
        if (m_leavingRecovery)
        {
            segmentsAcked = std::min<uint32_t>(segmentsAcked, 1);
            m_leavingRecovery = false;
        }
        TcpLinuxReno::IncreaseWindow(tcb, segmentsAcked);
    }

  private:
    bool m_leavingRecovery = false;
};

NS_OBJECT_ENSURE_REGISTERED(TcpLinuxRenoNoExitCredit);

} // namespace ns3

namespace
{

struct FlowSpec
{
    std::string cc;
    double start = 0;
    int64_t senderDelayNs = 0;
    int64_t receiverDelayNs = 0;
    std::string ecn = "Off";
    bool pace = false;
};

struct Spec
{
    std::vector<std::pair<std::string, std::string>> defaults;
    uint64_t rate = 0, reverseRate = 0, accessRate = 0;
    int64_t delayNs = 0, reverseDelayNs = 0;
    uint32_t limit = 0, reverseLimit = 0, accessLimit = 0;
    std::string qdisc;
    std::vector<FlowSpec> flows;
    double warmup = 0, duration = 0, sample = 0.1;
    uint32_t rng = 1;
};

[[noreturn]] void
Fail(const std::string& why)
{
    std::cerr << "error: " << why << std::endl;
    std::exit(2);
}

Spec
ReadSpec(const std::string& path)
{
    std::ifstream in(path);
    if (!in)
    {
        Fail(path + ": cannot be read");
    }
    Spec s;
    std::string line;
    int n = 0;
    while (std::getline(in, line))
    {
        ++n;
        auto hash = line.find('#');
        if (hash != std::string::npos)
        {
            line.erase(hash);
        }
        std::istringstream ls(line);
        std::string key;
        if (!(ls >> key))
        {
            continue;
        }
        bool ok = true;
        if (key == "default")
        {
            std::string name, value;
            ok = static_cast<bool>(ls >> name >> value);
            s.defaults.emplace_back(name, value);
        }
        else if (key == "bottleneck")
        {
            ok = static_cast<bool>(ls >> s.rate >> s.delayNs >> s.limit >> s.qdisc);
        }
        else if (key == "reverse")
        {
            ok = static_cast<bool>(ls >> s.reverseRate >> s.reverseDelayNs >> s.reverseLimit);
        }
        else if (key == "access")
        {
            ok = static_cast<bool>(ls >> s.accessRate >> s.accessLimit);
        }
        else if (key == "flow")
        {
            FlowSpec f;
            int pace = 0;
            ok = static_cast<bool>(ls >> f.cc >> f.start >> f.senderDelayNs >> f.receiverDelayNs >>
                                   f.ecn >> pace);
            f.pace = pace != 0;
            s.flows.push_back(f);
        }
        else if (key == "window")
        {
            ok = static_cast<bool>(ls >> s.warmup >> s.duration);
        }
        else if (key == "sample")
        {
            ok = static_cast<bool>(ls >> s.sample);
        }
        else if (key == "rng")
        {
            ok = static_cast<bool>(ls >> s.rng);
        }
        else
        {
            ok = false;
        }
        if (!ok)
        {
            Fail(path + ":" + std::to_string(n) + ": cannot read '" + line + "'");
        }
    }
    if (s.flows.empty() || s.rate == 0 || s.duration <= s.warmup || s.qdisc.empty())
    {
        Fail(path + ": needs a bottleneck, a window and at least one flow");
    }
    return s;
}

/// The integral over [warm-up, end) of a piecewise-constant value, updated at its changes.
struct TimeAverage
{
    double from = 0, to = 0;
    double lastT = 0, lastV = 0, integral = 0;

    void Set(double now, double v)
    {
        double a = std::max(lastT, from);
        double b = std::min(now, to);
        if (b > a)
        {
            integral += lastV * (b - a);
        }
        lastT = now;
        lastV = v;
    }

    double Mean(double end)
    {
        Set(end, lastV);
        return integral / (to - from);
    }
};

struct FlowStats
{
    uint64_t txBytes = 0; // IP bytes whose transmission on the bottleneck started in the window
    uint64_t txPackets = 0;
    uint64_t rxBytes = 0; // payload delivered to the receiving application in the window
    uint64_t arrivals = 0; // packets offered to the bottleneck's queue disc in the window
    uint64_t retx = 0, timeouts = 0, losses = 0, recoveries = 0, cwrs = 0;
    uint64_t marks = 0;
    std::map<std::string, uint64_t> drops; // by the queue disc's reason
    uint32_t cwnd = 0;
    TimeAverage cwndAvg, srttAvg;
};

Spec g_spec;
std::vector<FlowStats> g_flows;
std::map<uint32_t, size_t> g_flowOfAddress; // sender address -> flow
std::unordered_map<uint64_t, int64_t> g_enqueuedAt; // packet uid -> queue disc enqueue time (ns)
std::vector<double> g_delays;                       // queueing delays (s) of transmissions in the window
uint64_t g_txBytes = 0, g_txPackets = 0;
uint64_t g_sampleTxBytes = 0, g_sampleDrops = 0; // since the last sample
uint32_t g_qdiscPackets = 0, g_devicePackets = 0;
TimeAverage g_queue;
uint32_t g_queueMax = 0;
std::vector<Ptr<TcpSocketBase>> g_senders;
std::ofstream g_series;
std::ofstream g_events;

void
Event(long f, const char* what, double value)
{
    if (g_events.is_open())
    {
        g_events << Simulator::Now().GetSeconds() << "," << f << "," << what << "," << value << "\n";
    }
}

bool
InWindow()
{
    double t = Simulator::Now().GetSeconds();
    return t >= g_spec.warmup && t < g_spec.duration;
}

long
FlowOf(const Ipv4Header& h)
{
    auto it = g_flowOfAddress.find(h.GetSource().Get());
    return it == g_flowOfAddress.end() ? -1 : static_cast<long>(it->second);
}

long
FlowOfItem(Ptr<const QueueDiscItem> item)
{
    auto ip = DynamicCast<const Ipv4QueueDiscItem>(item);
    return ip ? FlowOf(ip->GetHeader()) : -1;
}

void
QueueChanged()
{
    uint32_t q = g_qdiscPackets + g_devicePackets;
    g_queue.Set(Simulator::Now().GetSeconds(), q);
    if (InWindow())
    {
        g_queueMax = std::max(g_queueMax, q);
    }
}

void
QdiscPackets(uint32_t, uint32_t v)
{
    g_qdiscPackets = v;
    QueueChanged();
}

void
DevicePackets(uint32_t, uint32_t v)
{
    g_devicePackets = v;
    QueueChanged();
}

void
QdiscEnqueue(Ptr<const QueueDiscItem> item)
{
    long f = FlowOfItem(item);
    if (f >= 0 && InWindow())
    {
        g_flows[f].arrivals++;
    }
}

void
QdiscDequeue(Ptr<const QueueDiscItem> item)
{
    g_enqueuedAt[item->GetPacket()->GetUid()] = item->GetTimeStamp().GetNanoSeconds();
}

void
QdiscDrop(bool beforeEnqueue, Ptr<const QueueDiscItem> item, const char* reason)
{
    g_enqueuedAt.erase(item->GetPacket()->GetUid());
    g_sampleDrops++;
    long f = FlowOfItem(item);
    if (g_events.is_open())
    {
        TcpHeader tcp;
        if (item->GetPacket()->PeekHeader(tcp))
        {
            Event(f, "drop", tcp.GetSequenceNumber().GetValue());
        }
    }
    if (f >= 0 && InWindow())
    {
        g_flows[f].drops[reason]++;
        if (beforeEnqueue)
        {
            g_flows[f].arrivals++; // (an arrival that was enqueued counts in QdiscEnqueue)
        }
    }
}

void
QdiscMark(Ptr<const QueueDiscItem> item, const char*)
{
    long f = FlowOfItem(item);
    if (f >= 0 && InWindow())
    {
        g_flows[f].marks++;
    }
}

void
BottleneckTxBegin(Ptr<const Packet> p)
{
    auto it = g_enqueuedAt.find(p->GetUid());
    int64_t enq = -1;
    if (it != g_enqueuedAt.end())
    {
        enq = it->second;
        g_enqueuedAt.erase(it);
    }
    if (!InWindow())
    {
        return;
    }
    Ptr<Packet> copy = p->Copy();
    PppHeader ppp;
    copy->RemoveHeader(ppp);
    Ipv4Header ip;
    copy->PeekHeader(ip);
    uint32_t bytes = ip.GetPayloadSize() + ip.GetSerializedSize();
    g_sampleTxBytes += bytes;
    g_txBytes += bytes;
    g_txPackets++;
    long f = FlowOf(ip);
    if (f >= 0)
    {
        g_flows[f].txBytes += bytes;
        g_flows[f].txPackets++;
    }
    if (enq >= 0)
    {
        g_delays.push_back((Simulator::Now().GetNanoSeconds() - enq) * 1e-9);
    }
}

void
Retransmission(size_t f,
               Ptr<const Packet>,
               const TcpHeader& h,
               const Address&,
               const Address&,
               Ptr<const TcpSocketBase>)
{
    Event(f, "retx", h.GetSequenceNumber().GetValue());
    if (InWindow())
    {
        g_flows[f].retx++;
    }
}

void
CongState(size_t f, TcpSocketState::TcpCongState_t, TcpSocketState::TcpCongState_t now)
{
    Event(f, "state", now); // 0 open, 1 disorder, 2 cwr, 3 recovery, 4 loss
    if (!InWindow())
    {
        return;
    }
    if (now == TcpSocketState::CA_RECOVERY)
    {
        g_flows[f].recoveries++;
    }
    else if (now == TcpSocketState::CA_CWR)
    {
        g_flows[f].cwrs++;
    }
    else if (now == TcpSocketState::CA_LOSS)
    {
        g_flows[f].losses++; // the first timeout of a run of timeouts
    }
}

// A retransmission timeout doubles the RTO (ns-3: TcpSocketBase::ReTxTimeout, capped at 60 s);
// every other change of the RTO recomputes it from the estimator.
void
Rto(size_t f, Time before, Time after)
{
    bool doubled = after == before + before || (after == Seconds(60) && before >= Seconds(30));
    if (doubled)
    {
        Event(f, "timeout", after.GetSeconds());
    }
    if (doubled && InWindow())
    {
        g_flows[f].timeouts++;
    }
}

void
Cwnd(size_t f, uint32_t, uint32_t v)
{
    g_flows[f].cwnd = v;
    g_flows[f].cwndAvg.Set(Simulator::Now().GetSeconds(), v);
}

void
Srtt(size_t f, Time, Time v)
{
    g_flows[f].srttAvg.Set(Simulator::Now().GetSeconds(), v.GetSeconds());
}

void
Received(size_t f, Ptr<Socket> s)
{
    Ptr<Packet> p;
    while ((p = s->Recv()))
    {
        if (InWindow())
        {
            g_flows[f].rxBytes += p->GetSize();
        }
    }
}

void
Accepted(size_t f, Ptr<Socket> s, const Address&)
{
    s->SetRecvCallback(MakeBoundCallback(&Received, f));
}

/// A bulk sender: keeps the socket's send buffer full.
void
Fill(Ptr<Socket> s, uint32_t)
{
    static const uint32_t chunk = 64 * 1024;
    while (s->GetTxAvailable() > 0)
    {
        uint32_t n = std::min(chunk, s->GetTxAvailable());
        if (s->Send(Create<Packet>(n)) < 0)
        {
            break;
        }
    }
}

void
Connected(Ptr<Socket> s)
{
    Fill(s, 0);
}

void
ConnectFailed(Ptr<Socket>)
{
    Fail("a connection could not be opened");
}

void
StartFlow(size_t f, Ptr<Node> node, Address peer)
{
    Ptr<Socket> s = Socket::CreateSocket(node, TcpSocketFactory::GetTypeId());
    auto tcp = DynamicCast<TcpSocketBase>(s);
    tcp->SetAttribute("UseEcn", StringValue(g_spec.flows[f].ecn));
    if (g_spec.flows[f].pace)
    {
        tcp->SetPacingStatus(true);
    }
    tcp->TraceConnectWithoutContext("Retransmission", MakeBoundCallback(&Retransmission, f));
    tcp->TraceConnectWithoutContext("CongState", MakeBoundCallback(&CongState, f));
    tcp->TraceConnectWithoutContext("RTO", MakeBoundCallback(&Rto, f));
    tcp->TraceConnectWithoutContext("CongestionWindow", MakeBoundCallback(&Cwnd, f));
    tcp->TraceConnectWithoutContext("RTT", MakeBoundCallback(&Srtt, f));
    s->Bind();
    s->SetConnectCallback(MakeCallback(&Connected), MakeCallback(&ConnectFailed));
    s->SetSendCallback(MakeCallback(&Fill));
    s->Connect(peer);
    g_senders.push_back(tcp);
}

void
Sample()
{
    g_series << Simulator::Now().GetSeconds() << "," << g_qdiscPackets + g_devicePackets << ","
             << g_sampleTxBytes << "," << g_sampleDrops;
    g_sampleTxBytes = 0;
    g_sampleDrops = 0;
    for (auto& f : g_flows)
    {
        g_series << "," << f.cwnd;
    }
    g_series << "\n";
    Simulator::Schedule(Seconds(g_spec.sample), &Sample);
}

double
Percentile(std::vector<double>& v, double q)
{
    if (v.empty())
    {
        return NAN;
    }
    size_t k = static_cast<size_t>(std::ceil(q * v.size())) - 1;
    k = std::min(k, v.size() - 1);
    std::nth_element(v.begin(), v.begin() + k, v.end());
    return v[k];
}

std::string
Num(double v)
{
    if (!std::isfinite(v))
    {
        return "null";
    }
    std::ostringstream o;
    o.precision(12);
    o << v;
    return o.str();
}

std::string
Escape(const std::string& s)
{
    std::string o;
    for (char c : s)
    {
        if (c == '"' || c == '\\')
        {
            o += '\\';
        }
        o += c;
    }
    return o;
}

template <typename Counts>
void
WriteCounts(std::ostream& o, const Counts& now, const Counts& before)
{
    o << "{";
    bool first = true;
    for (const auto& [reason, n] : now)
    {
        auto it = before.find(reason);
        uint64_t d = n - (it == before.end() ? 0 : it->second);
        o << (first ? "" : ", ") << "\"" << Escape(reason) << "\": " << d;
        first = false;
    }
    o << "}";
}

QueueDisc::Stats g_statsAtWarmup;
Ptr<QueueDisc> g_qdisc;

void
SnapshotStats()
{
    g_statsAtWarmup = g_qdisc->GetStats();
}

} // namespace

int
main(int argc, char* argv[])
{
    if (argc < 3)
    {
        std::cerr << "usage: dumbbell SPEC OUT.json [SERIES.csv]" << std::endl;
        return 2;
    }
    g_spec = ReadSpec(argv[1]);
    const Spec& s = g_spec;
    RngSeedManager::SetSeed(1);
    RngSeedManager::SetRun(s.rng);
    for (const auto& [name, value] : s.defaults)
    {
        Config::SetDefault(name, StringValue(value));
    }

    size_t n = s.flows.size();
    g_flows.resize(n);
    for (auto& f : g_flows)
    {
        for (TimeAverage* t : {&f.cwndAvg, &f.srttAvg})
        {
            t->from = s.warmup;
            t->to = s.duration;
        }
    }
    g_queue.from = s.warmup;
    g_queue.to = s.duration;

    NodeContainer routers, senders, receivers;
    routers.Create(2);
    senders.Create(n);
    receivers.Create(n);
    InternetStackHelper stack;
    stack.InstallAll();
    for (size_t i = 0; i < n; ++i)
    {
        // each end's congestion control (the receiver's matters for DCTCP's echo)
        for (Ptr<Node> node : {senders.Get(i), receivers.Get(i)})
        {
            node->GetObject<TcpL4Protocol>()->SetAttribute(
                "SocketType",
                TypeIdValue(TypeId::LookupByName(s.flows[i].cc)));
        }
    }

    PointToPointHelper p2p;
    p2p.SetQueue("ns3::DropTailQueue", "MaxSize", StringValue("1p"));
    TrafficControlHelper fifo;
    Ipv4AddressHelper addr;

    // the bottleneck R1 -> R2, its reverse R2 -> R1 (the same rate unless told otherwise)
    p2p.SetDeviceAttribute("DataRate", DataRateValue(DataRate(s.rate)));
    p2p.SetChannelAttribute("Delay", TimeValue(NanoSeconds(s.delayNs)));
    NetDeviceContainer core = p2p.Install(routers.Get(0), routers.Get(1));
    DynamicCast<PointToPointNetDevice>(core.Get(1))->SetDataRate(DataRate(s.reverseRate));
    if (s.reverseDelayNs != s.delayNs)
    {
        Fail("the reverse delay must equal the bottleneck's (one ns-3 channel)");
    }
    TrafficControlHelper bottleneck;
    bottleneck.SetRootQueueDisc(s.qdisc,
                                "MaxSize",
                                QueueSizeValue(QueueSize(QueueSizeUnit::PACKETS, s.limit)));
    g_qdisc = bottleneck.Install(core.Get(0)).Get(0);
    fifo.SetRootQueueDisc("ns3::FifoQueueDisc",
                          "MaxSize",
                          QueueSizeValue(QueueSize(QueueSizeUnit::PACKETS, s.reverseLimit)));
    fifo.Install(core.Get(1));
    addr.SetBase("10.0.0.0", "255.255.255.0");
    addr.Assign(core);

    TrafficControlHelper access;
    access.SetRootQueueDisc("ns3::FifoQueueDisc",
                            "MaxSize",
                            QueueSizeValue(QueueSize(QueueSizeUnit::PACKETS, s.accessLimit)));
    p2p.SetDeviceAttribute("DataRate", DataRateValue(DataRate(s.accessRate)));
    std::vector<Address> sinks;
    for (size_t i = 0; i < n; ++i)
    {
        p2p.SetChannelAttribute("Delay", TimeValue(NanoSeconds(s.flows[i].senderDelayNs)));
        NetDeviceContainer up = p2p.Install(senders.Get(i), routers.Get(0));
        access.Install(up);
        std::ostringstream net;
        net << "10.1." << i << ".0";
        addr.SetBase(net.str().c_str(), "255.255.255.0");
        Ipv4InterfaceContainer upIf = addr.Assign(up);
        g_flowOfAddress[upIf.GetAddress(0).Get()] = i;

        p2p.SetChannelAttribute("Delay", TimeValue(NanoSeconds(s.flows[i].receiverDelayNs)));
        NetDeviceContainer down = p2p.Install(routers.Get(1), receivers.Get(i));
        access.Install(down);
        std::ostringstream net2;
        net2 << "10.2." << i << ".0";
        addr.SetBase(net2.str().c_str(), "255.255.255.0");
        Ipv4InterfaceContainer downIf = addr.Assign(down);
        sinks.push_back(InetSocketAddress(downIf.GetAddress(1), 9000));
    }
    Ipv4GlobalRoutingHelper::PopulateRoutingTables();

    // receivers: one listening socket each, with the flow's ECN setting
    for (size_t i = 0; i < n; ++i)
    {
        Ptr<Socket> l = Socket::CreateSocket(receivers.Get(i), TcpSocketFactory::GetTypeId());
        l->SetAttribute("UseEcn", StringValue(s.flows[i].ecn));
        l->Bind(InetSocketAddress(Ipv4Address::GetAny(), 9000));
        l->Listen();
        l->SetAcceptCallback(MakeNullCallback<bool, Ptr<Socket>, const Address&>(),
                             MakeBoundCallback(&Accepted, i));
    }
    for (size_t i = 0; i < n; ++i)
    {
        Simulator::Schedule(Seconds(s.flows[i].start), &StartFlow, i, senders.Get(i), sinks[i]);
    }

    // the bottleneck's measurements
    g_qdisc->TraceConnectWithoutContext("PacketsInQueue", MakeCallback(&QdiscPackets));
    g_qdisc->TraceConnectWithoutContext("Dequeue", MakeCallback(&QdiscDequeue));
    g_qdisc->TraceConnectWithoutContext("Enqueue", MakeCallback(&QdiscEnqueue));
    g_qdisc->TraceConnectWithoutContext("DropBeforeEnqueue", MakeBoundCallback(&QdiscDrop, true));
    g_qdisc->TraceConnectWithoutContext("DropAfterDequeue", MakeBoundCallback(&QdiscDrop, false));
    g_qdisc->TraceConnectWithoutContext("Mark", MakeCallback(&QdiscMark));
    auto dev = DynamicCast<PointToPointNetDevice>(core.Get(0));
    dev->GetQueue()->TraceConnectWithoutContext("PacketsInQueue", MakeCallback(&DevicePackets));
    dev->TraceConnectWithoutContext("PhyTxBegin", MakeCallback(&BottleneckTxBegin));
    Simulator::Schedule(Seconds(s.warmup), &SnapshotStats);
    if (argc > 3)
    {
        g_series.open(argv[3]);
        g_series << "time_s,queue_pkts,tx_bytes,drops";
        for (size_t i = 0; i < n; ++i)
        {
            g_series << ",cwnd" << i;
        }
        g_series << "\n";
        Simulator::Schedule(Seconds(s.sample), &Sample);
    }
    if (argc > 4)
    {
        g_events.open(argv[4]);
        g_events << "time_s,flow,event,value\n";
    }

    Simulator::Stop(Seconds(s.duration));
    Simulator::Run();

    double end = s.duration;
    QueueDisc::Stats now = g_qdisc->GetStats();
    const QueueDisc::Stats& w = g_statsAtWarmup;
    std::ofstream out(argv[2]);
    out << "{\n  \"bottleneck\": {\"tx_bytes\": " << g_txBytes << ", \"tx_packets\": " << g_txPackets
        << ", \"queue_mean_pkts\": " << Num(g_queue.Mean(end)) << ", \"queue_max_pkts\": " << g_queueMax
        << ",\n    \"delay_samples\": " << g_delays.size();
    double sum = 0;
    for (double d : g_delays)
    {
        sum += d;
    }
    out << ", \"delay_mean_s\": " << Num(g_delays.empty() ? NAN : sum / g_delays.size())
        << ", \"delay_p50_s\": " << Num(Percentile(g_delays, 0.5))
        << ", \"delay_p95_s\": " << Num(Percentile(g_delays, 0.95))
        << ", \"delay_p99_s\": " << Num(Percentile(g_delays, 0.99));
    out << ",\n    \"arrivals\": " << now.nTotalReceivedPackets - w.nTotalReceivedPackets
        << ", \"drops_before_enqueue\": ";
    WriteCounts(out, now.nDroppedPacketsBeforeEnqueue, w.nDroppedPacketsBeforeEnqueue);
    out << ", \"drops_after_dequeue\": ";
    WriteCounts(out, now.nDroppedPacketsAfterDequeue, w.nDroppedPacketsAfterDequeue);
    out << ", \"marks\": ";
    WriteCounts(out, now.nMarkedPackets, w.nMarkedPackets);
    out << "},\n  \"flows\": [";
    for (size_t i = 0; i < n; ++i)
    {
        FlowStats& f = g_flows[i];
        out << (i ? "," : "") << "\n    {\"tx_bytes\": " << f.txBytes << ", \"tx_packets\": " << f.txPackets
            << ", \"arrivals\": " << f.arrivals << ", \"rx_bytes\": " << f.rxBytes
            << ", \"retx_pkts\": " << f.retx << ", \"timeouts\": " << f.timeouts
            << ", \"loss_states\": " << f.losses
            << ", \"recoveries\": " << f.recoveries << ", \"cwr\": " << f.cwrs << ", \"marks\": " << f.marks
            << ", \"drops\": ";
        WriteCounts(out, f.drops, std::map<std::string, uint64_t>());
        out
            << ", \"cwnd_mean_bytes\": " << Num(f.cwndAvg.Mean(end))
            << ", \"srtt_mean_s\": " << Num(f.srttAvg.Mean(end)) << "}";
    }
    out << "\n  ]\n}\n";
    Simulator::Destroy();
    return 0;
}
