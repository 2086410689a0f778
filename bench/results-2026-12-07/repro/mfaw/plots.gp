# Made by jkvbench --plot: run `gnuplot plots.gp` in this directory.
set style fill solid 0.85 border -1
set grid ytics
set xtics rotate by -40 nomirror
set terminal pngcairo size 900,560 noenhanced font ',9'
set rmargin 12
set output 'throughput_multidb2.png'
set title 'multidb2: operations per second (higher is better)'
set key off
set logscale y
set ylabel 'ops/s'
set xrange [-0.6:9]
set yrange [*:*]
plot 'plot_multidb2.dat' using 0:3:(0.8):2:xtic(1) with boxes lc variable
set output 'latency_multidb2.png'
set title 'multidb2: latency per operation in microseconds (lower is better)'
set key top left
set ylabel 'microseconds'
set style data histograms
set style histogram clustered gap 1
set xrange [*:*]
plot 'plot_multidb2.dat' using 4:xtic(1) title 'p50', '' using 5 title 'p99', '' using 6 title 'p99.9', '' using 7 title 'max'
set style data points
unset logscale y
set output 'fsyncs_multidb2.png'
set title 'multidb2: fsync + fdatasync + msync calls per commit'
set key off
set ylabel 'flushes per commit'
set xrange [-0.6:9]
set yrange [0:*]
set offsets 0, 0, graph 0.08, 0
plot 'plot_multidb2.dat' using 0:8:(0.8):2:xtic(1) with boxes lc variable
set yrange [*:*]
set xrange [*:*]
set offsets 0, 0, 0, 0
set terminal pngcairo size 1120,440 noenhanced font ',9'
set output 'percentiles_multidb2.png'
set multiplot layout 1,2 title "multidb2: latency by percentile (log scales; lower is better)" font ',11'
set logscale xy
set xrange [1:1500]
set yrange [249.679:447531]
set xtics norotate ("0%%" 1, "90%%" 10, "99%%" 100, "99.9%%" 1000, "99.99%%" 10000, "99.999%%" 100000, "99.9999%%" 1000000)
set grid xtics ytics
set key top left opaque box
set ylabel 'microseconds'
set xlabel 'percentile'
set style data lines
set title 'journalkv, sync full'
plot 'percentiles_multidb2.dat' index 0 using 1:3 with lines lw 1.5 lc rgb '#9400d3' dt 1 title 'persist on xfs', \
     'percentiles_multidb2.dat' index 1 using 1:3 with lines lw 1.5 lc rgb '#009e73' dt 1 title 'persist on ext4', \
     'percentiles_multidb2.dat' index 2 using 1:3 with lines lw 1.5 lc rgb '#0072b2' dt 1 title 'wal/default on xfs', \
     'percentiles_multidb2.dat' index 3 using 1:3 with lines lw 1.5 lc rgb '#e69f00' dt 1 title 'wal/default on ext4', \
     'percentiles_multidb2.dat' index 4 using 1:3 with lines lw 1.5 lc rgb '#e51e10' dt 1 title 'atomic on xfs'
set title 'sqlite, sync full'
plot 'percentiles_multidb2.dat' index 5 using 1:3 with lines lw 1.5 lc rgb '#9400d3' dt 1 title 'persist on xfs', \
     'percentiles_multidb2.dat' index 6 using 1:3 with lines lw 1.5 lc rgb '#009e73' dt 1 title 'persist on ext4', \
     'percentiles_multidb2.dat' index 7 using 1:3 with lines lw 1.5 lc rgb '#0072b2' dt 1 title 'wal/default on xfs', \
     'percentiles_multidb2.dat' index 8 using 1:3 with lines lw 1.5 lc rgb '#e69f00' dt 1 title 'wal/default on ext4'
unset multiplot
reset
set style fill solid 0.85 border -1
set grid ytics
set xtics rotate by -40 nomirror
set terminal pngcairo size 900,560 noenhanced font ',9'
set rmargin 12
set output 'throughput_multidb4.png'
set title 'multidb4: operations per second (higher is better)'
set key off
set logscale y
set ylabel 'ops/s'
set xrange [-0.6:9]
set yrange [*:*]
plot 'plot_multidb4.dat' using 0:3:(0.8):2:xtic(1) with boxes lc variable
set output 'latency_multidb4.png'
set title 'multidb4: latency per operation in microseconds (lower is better)'
set key top left
set ylabel 'microseconds'
set style data histograms
set style histogram clustered gap 1
set xrange [*:*]
plot 'plot_multidb4.dat' using 4:xtic(1) title 'p50', '' using 5 title 'p99', '' using 6 title 'p99.9', '' using 7 title 'max'
set style data points
unset logscale y
set output 'fsyncs_multidb4.png'
set title 'multidb4: fsync + fdatasync + msync calls per commit'
set key off
set ylabel 'flushes per commit'
set xrange [-0.6:9]
set yrange [0:*]
set offsets 0, 0, graph 0.08, 0
plot 'plot_multidb4.dat' using 0:8:(0.8):2:xtic(1) with boxes lc variable
set yrange [*:*]
set xrange [*:*]
set offsets 0, 0, 0, 0
set terminal pngcairo size 1120,440 noenhanced font ',9'
set output 'percentiles_multidb4.png'
set multiplot layout 1,2 title "multidb4: latency by percentile (log scales; lower is better)" font ',11'
set logscale xy
set xrange [1:1500]
set yrange [462.261:435336]
set xtics norotate ("0%%" 1, "90%%" 10, "99%%" 100, "99.9%%" 1000, "99.99%%" 10000, "99.999%%" 100000, "99.9999%%" 1000000)
set grid xtics ytics
set key top left opaque box
set ylabel 'microseconds'
set xlabel 'percentile'
set style data lines
set title 'journalkv, sync full'
plot 'percentiles_multidb4.dat' index 0 using 1:3 with lines lw 1.5 lc rgb '#9400d3' dt 1 title 'persist on xfs', \
     'percentiles_multidb4.dat' index 1 using 1:3 with lines lw 1.5 lc rgb '#009e73' dt 1 title 'persist on ext4', \
     'percentiles_multidb4.dat' index 2 using 1:3 with lines lw 1.5 lc rgb '#0072b2' dt 1 title 'wal/default on xfs', \
     'percentiles_multidb4.dat' index 3 using 1:3 with lines lw 1.5 lc rgb '#e69f00' dt 1 title 'wal/default on ext4', \
     'percentiles_multidb4.dat' index 4 using 1:3 with lines lw 1.5 lc rgb '#e51e10' dt 1 title 'atomic on xfs'
set title 'sqlite, sync full'
plot 'percentiles_multidb4.dat' index 5 using 1:3 with lines lw 1.5 lc rgb '#9400d3' dt 1 title 'persist on xfs', \
     'percentiles_multidb4.dat' index 6 using 1:3 with lines lw 1.5 lc rgb '#009e73' dt 1 title 'persist on ext4', \
     'percentiles_multidb4.dat' index 7 using 1:3 with lines lw 1.5 lc rgb '#0072b2' dt 1 title 'wal/default on xfs', \
     'percentiles_multidb4.dat' index 8 using 1:3 with lines lw 1.5 lc rgb '#e69f00' dt 1 title 'wal/default on ext4'
unset multiplot
reset
set style fill solid 0.85 border -1
set grid ytics
set xtics rotate by -40 nomirror
